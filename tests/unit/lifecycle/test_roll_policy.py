"""Spark's executor roll policies on made-up executor summaries (cases after ExecutorRollPluginSuite)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from k8s_backend.lifecycle.roll_policy import ExecutorSummary, RollPolicy, choose, outliers

T0 = datetime(2026, 1, 1)


def summary(executor_id: str, minutes: int = 0, **metrics: int) -> ExecutorSummary:
    return ExecutorSummary(id=executor_id, add_time=T0 + timedelta(minutes=minutes), **metrics)


# Executor 1 is the oldest, 2 the longest in total, 3 has the longest average, 4 the most GC time...
DRIVER = summary("driver", -10, total_tasks=100, total_duration=10**9, total_gc_time=10**9)
E1 = summary("1", 0, total_tasks=10, total_duration=100)
E2 = summary("2", 1, total_tasks=50, total_duration=900, disk_used=5)
E3 = summary("3", 2, total_tasks=2, total_duration=600, total_shuffle_write=7)
E4 = summary("4", 3, total_tasks=10, total_duration=200, total_gc_time=80, failed_tasks=3)
E5 = summary("5", 4, total_tasks=10, total_duration=200, peak_jvm_heap_memory=9, peak_jvm_off_heap_memory=4)
ALL = [DRIVER, E5, E4, E3, E2, E1]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RollPolicy.ID, "1"),
        (RollPolicy.ADD_TIME, "1"),
        (RollPolicy.TOTAL_GC_TIME, "4"),
        (RollPolicy.TOTAL_DURATION, "2"),
        (RollPolicy.AVERAGE_DURATION, "3"),
        (RollPolicy.FAILED_TASKS, "4"),
        (RollPolicy.PEAK_JVM_ONHEAP_MEMORY, "5"),
        (RollPolicy.PEAK_JVM_OFFHEAP_MEMORY, "5"),
        (RollPolicy.TOTAL_SHUFFLE_WRITE, "3"),
        (RollPolicy.DISK_USED, "2"),
        (RollPolicy.OUTLIER, "2"),  # no outlier among five: the TOTAL_DURATION fallback
        (RollPolicy.OUTLIER_NO_FALLBACK, None),
    ],
)
def test_each_policy_picks_as_spark_defines_it_and_never_the_driver(
    policy: RollPolicy, expected: str
) -> None:
    assert choose(ALL, policy) == expected


def test_the_id_policy_compares_ids_as_numbers() -> None:
    assert choose([summary("10"), summary("9")], RollPolicy.ID) == "9"


def test_nothing_to_roll_without_executors() -> None:
    for policy in RollPolicy:
        assert choose([], policy) is None
        assert choose([DRIVER], policy) is None


def test_min_tasks_leaves_out_executors_that_ran_fewer_tasks() -> None:
    # 3 ran only two tasks; 5 and 4 both average 20 ms and 4 is listed last, so it wins the tie.
    assert choose(ALL, RollPolicy.AVERAGE_DURATION, min_tasks=10) == "4"
    assert choose(ALL, RollPolicy.AVERAGE_DURATION, min_tasks=0) == "3"
    assert choose(ALL, RollPolicy.ID, min_tasks=11) == "2"
    assert choose(ALL, RollPolicy.ID, min_tasks=51) is None


def test_among_equal_values_the_last_listed_wins_as_in_spark_s_reversed_stable_sort() -> None:
    assert (
        choose([summary("1", total_duration=5), summary("2", total_duration=5)], RollPolicy.TOTAL_DURATION)
        == "2"
    )


def crowd(extra: ExecutorSummary) -> list[ExecutorSummary]:
    return [
        summary(str(i), i, total_tasks=10, total_duration=100, total_gc_time=10) for i in range(1, 10)
    ] + [extra]


def test_an_outlier_in_one_dimension_is_rolled_first() -> None:
    slow_gc = summary("42", 50, total_tasks=10, total_duration=100, total_gc_time=1000)
    assert choose(crowd(slow_gc), RollPolicy.OUTLIER) == "42"
    assert choose(crowd(slow_gc), RollPolicy.OUTLIER_NO_FALLBACK) == "42"
    # Without the outlier, OUTLIER falls back to the longest total duration and NO_FALLBACK picks none.
    plain = crowd(summary("42", 50, total_tasks=10, total_duration=100, total_gc_time=10))
    assert choose(plain, RollPolicy.OUTLIER_NO_FALLBACK) is None
    assert choose(plain, RollPolicy.OUTLIER) == "42"  # all equal: the last listed


def test_average_duration_outliers_come_before_the_other_dimensions() -> None:
    slow_tasks = summary("7", 0, total_tasks=10, total_duration=100)  # average 10, total not an outlier
    items = [summary(str(i), i, total_tasks=100, total_duration=100) for i in range(8, 18)] + [slow_tasks]
    items.append(summary("99", 0, total_tasks=100, total_duration=100, disk_used=10**6))
    assert choose(items, RollPolicy.OUTLIER) == "7"


def test_outliers_are_more_than_two_standard_deviations_above_the_mean() -> None:
    # 0 x 4 and 10: mean 2, population sd 4, and 10 - 2 = 8 is not more than 8: no outlier (the edge).
    # 0 x 5 and 10: mean 10/6, population sd ~3.73, and 8.33 > 7.45: an outlier.
    four = [summary(str(i)) for i in range(4)] + [summary("x", disk_used=10)]
    assert outliers(four, lambda e: float(e.disk_used)) == []
    five = [summary(str(i)) for i in range(5)] + [summary("x", disk_used=10)]
    assert [e.id for e in outliers(five, lambda e: float(e.disk_used))] == ["x"]


def test_a_python_policy_picks_among_the_candidates_only() -> None:
    seen: list[list[str]] = []

    def youngest(items: Sequence[ExecutorSummary]) -> str | None:
        seen.append([e.id for e in items])
        return max(items, key=lambda e: e.add_time).id

    assert choose(ALL, youngest, min_tasks=10) == "5"
    assert seen == [["5", "4", "2", "1"]]  # no driver, no executor under min_tasks
    with pytest.raises(ValueError, match="not a candidate"):
        choose(ALL, lambda items: "driver")
