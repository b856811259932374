"""The pure roll decision on made-up executor summaries: which executor, or why none this interval."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from k8s_backend.lifecycle.roll_decision import decide_roll, policy_name
from k8s_backend.lifecycle.roll_policy import ExecutorSummary, RollPolicy

T0 = datetime(2026, 1, 1)


def summary(executor_id: str, minutes: int = 0, **metrics: int) -> ExecutorSummary:
    return ExecutorSummary(id=executor_id, add_time=T0 + timedelta(minutes=minutes), **metrics)


DRIVER = summary("driver", -5, total_tasks=100, total_duration=10**9)
OLD = summary("1", 0, total_tasks=10, total_duration=300)
SLOW = summary("2", 1, total_tasks=10, total_duration=900)
NEW = summary("3", 2, total_tasks=1, total_duration=50)
ALL = [DRIVER, NEW, SLOW, OLD]


def test_the_policy_s_choice_is_rolled_with_the_reason() -> None:
    decision = decide_roll(ALL, RollPolicy.ADD_TIME, min_tasks=0, target=3)
    assert decision.rolls and decision.executor_id == "1"
    assert decision.reason == "chosen by policy ADD_TIME among 3 candidate executors"
    assert decide_roll(ALL, RollPolicy.OUTLIER, min_tasks=0, target=3).executor_id == "2"


def test_the_driver_is_never_rolled_nor_counted_as_an_executor() -> None:
    decision = decide_roll([DRIVER], RollPolicy.ID, min_tasks=0, target=0)
    assert not decision.rolls
    assert decision.reason == "There is nothing to roll: no executor is alive"


def test_nothing_is_rolled_below_the_target() -> None:
    decision = decide_roll(ALL, RollPolicy.ID, min_tasks=0, target=4)
    assert decision.executor_id is None
    assert "3 executors alive, fewer than the target of 4" in decision.reason


def test_nothing_is_rolled_while_an_executor_is_still_decommissioning() -> None:
    decision = decide_roll(ALL, RollPolicy.ID, min_tasks=0, target=3, departing=frozenset({"2", "9"}))
    assert decision.executor_id is None
    assert decision.reason.startswith("executor 2 is still decommissioning")
    # Once it is gone from the driver's list, the next interval rolls again.
    assert decide_roll(
        [DRIVER, OLD, NEW], RollPolicy.ID, min_tasks=0, target=2, departing=frozenset({"2"})
    ).rolls


def test_executors_with_too_few_tasks_are_not_candidates() -> None:
    assert decide_roll(ALL, RollPolicy.ADD_TIME, min_tasks=5, target=3).executor_id == "1"
    decision = decide_roll(ALL, RollPolicy.ID, min_tasks=50, target=3)
    assert decision.executor_id is None
    assert "no executor has run 50 tasks yet" in decision.reason


def test_a_policy_without_a_fallback_may_choose_none() -> None:
    same = [summary(str(i), i, total_tasks=1, total_duration=10) for i in range(1, 4)]
    decision = decide_roll(same, RollPolicy.OUTLIER_NO_FALLBACK, min_tasks=0, target=3)
    assert decision.executor_id is None
    assert decision.reason == "There is nothing to roll: policy OUTLIER_NO_FALLBACK chose none"


def largest_disk(candidates: Sequence[ExecutorSummary]) -> str | None:
    return max(candidates, key=lambda s: s.total_duration).id


def test_a_python_hook_picks_among_the_candidates_and_is_named_in_the_reason() -> None:
    decision = decide_roll(ALL, largest_disk, min_tasks=2, target=3)
    assert decision.executor_id == "2"
    assert "python:test_roll_decision:largest_disk" in decision.reason
    assert policy_name(largest_disk) == "python:test_roll_decision:largest_disk"


@pytest.mark.parametrize(
    ("hook", "fragment"),
    [
        (lambda _: "driver", "which is not a candidate executor"),
        (lambda _: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_a_failing_hook_is_a_skip_naming_the_failure(hook: object, fragment: str) -> None:
    decision = decide_roll(ALL, hook, min_tasks=0, target=3)  # type: ignore[arg-type]
    assert decision.executor_id is None
    assert "failed" in decision.reason and fragment in decision.reason
