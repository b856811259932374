"""Which executor to roll: Spark's ExecutorRollPlugin choice, as pure functions on executor summaries.

:mod:`k8s_backend.lifecycle.roll_decision` applies them to the driver's executor summaries for the
executor roller (:mod:`k8s_backend.lifecycle.roller`). The definitions follow Spark 4.3's
``ExecutorRollPlugin.choose``: the driver is dropped, then executors with fewer than ``min_tasks`` tasks;
the policy sorts what is left and the first is chosen. Spark sorts with a stable sort and reverses it for
"largest first", so among equal values the one listed last wins; so here.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

DRIVER_ID = "driver"


class RollPolicy(enum.Enum):
    """``spark.kubernetes.executor.rollPolicy``."""

    ID = "ID"
    ADD_TIME = "ADD_TIME"
    TOTAL_GC_TIME = "TOTAL_GC_TIME"
    TOTAL_DURATION = "TOTAL_DURATION"
    AVERAGE_DURATION = "AVERAGE_DURATION"
    FAILED_TASKS = "FAILED_TASKS"
    PEAK_JVM_ONHEAP_MEMORY = "PEAK_JVM_ONHEAP_MEMORY"
    PEAK_JVM_OFFHEAP_MEMORY = "PEAK_JVM_OFFHEAP_MEMORY"
    TOTAL_SHUFFLE_WRITE = "TOTAL_SHUFFLE_WRITE"
    DISK_USED = "DISK_USED"
    OUTLIER = "OUTLIER"
    OUTLIER_NO_FALLBACK = "OUTLIER_NO_FALLBACK"


@attrs.frozen
class ExecutorSummary:
    """What the policies read of Spark's ``v1.ExecutorSummary`` (durations and GC time in ms)."""

    id: str
    add_time: datetime
    total_tasks: int = 0
    failed_tasks: int = 0
    total_duration: int = 0
    total_gc_time: int = 0
    total_shuffle_write: int = 0
    disk_used: int = 0
    peak_jvm_heap_memory: int = 0  # peakMemoryMetrics.JVMHeapMemory, 0 when unknown (as Spark)
    peak_jvm_off_heap_memory: int = 0  # peakMemoryMetrics.JVMOffHeapMemory


# A Python policy: given the candidate summaries (driver and too-young executors already dropped), the id
# of the executor to roll, or None for none.
PolicyHook = Callable[[Sequence[ExecutorSummary]], "str | None"]
Metric = Callable[[ExecutorSummary], float]


def _largest_first(items: Sequence[ExecutorSummary], key: Metric) -> list[ExecutorSummary]:
    # Not sorted(reverse=True): that keeps equal items in their order, Spark's reversed sort flips them.
    return list(reversed(sorted(items, key=key)))  # noqa: C413


def outliers(items: Sequence[ExecutorSummary], metric: Metric) -> list[ExecutorSummary]:
    """Executors whose value exceeds the mean by more than two population standard deviations, largest
    first (Spark's ``outliers``)."""
    if not items:
        return []
    values = [metric(e) for e in items]
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return _largest_first([e for e in items if metric(e) - mean > 2 * sd], metric)


def outliers_from_multiple_dimensions(items: Sequence[ExecutorSummary]) -> list[ExecutorSummary]:
    """Outliers of each dimension in Spark's order (average duration of executors with tasks first)."""
    with_tasks = [e for e in items if e.total_tasks > 0]
    # Spark divides two integers here (Long / Int), so the average is truncated.
    found = outliers(with_tasks, lambda e: float(e.total_duration // e.total_tasks))
    for metric in (
        lambda e: float(e.total_duration),
        lambda e: float(e.total_gc_time),
        lambda e: float(e.failed_tasks),
        lambda e: float(e.peak_jvm_heap_memory),
        lambda e: float(e.peak_jvm_off_heap_memory),
        lambda e: float(e.total_shuffle_write),
        lambda e: float(e.disk_used),
    ):
        found += outliers(items, metric)
    return found


_LARGEST: dict[RollPolicy, Metric] = {
    RollPolicy.TOTAL_GC_TIME: lambda e: e.total_gc_time,
    RollPolicy.TOTAL_DURATION: lambda e: e.total_duration,
    RollPolicy.AVERAGE_DURATION: lambda e: e.total_duration / max(1, e.total_tasks),
    RollPolicy.FAILED_TASKS: lambda e: e.failed_tasks,
    RollPolicy.PEAK_JVM_ONHEAP_MEMORY: lambda e: e.peak_jvm_heap_memory,
    RollPolicy.PEAK_JVM_OFFHEAP_MEMORY: lambda e: e.peak_jvm_off_heap_memory,
    RollPolicy.TOTAL_SHUFFLE_WRITE: lambda e: e.total_shuffle_write,
    RollPolicy.DISK_USED: lambda e: e.disk_used,
}


def candidates(summaries: Sequence[ExecutorSummary], min_tasks: int) -> list[ExecutorSummary]:
    """The executors a policy may pick: not the driver, and at least ``min_tasks`` tasks run."""
    return [e for e in summaries if e.id != DRIVER_ID and e.total_tasks >= min_tasks]


def ranked(items: Sequence[ExecutorSummary], policy: RollPolicy) -> list[ExecutorSummary]:
    """The candidates in the policy's order (the first is rolled)."""
    if policy is RollPolicy.ID:
        return sorted(items, key=lambda e: int(e.id))
    if policy is RollPolicy.ADD_TIME:
        return sorted(items, key=lambda e: e.add_time)
    if policy is RollPolicy.OUTLIER:
        return outliers_from_multiple_dimensions(items) + _largest_first(items, lambda e: e.total_duration)
    if policy is RollPolicy.OUTLIER_NO_FALLBACK:
        return outliers_from_multiple_dimensions(items)
    return _largest_first(items, _LARGEST[policy])


def choose(
    summaries: Sequence[ExecutorSummary], policy: RollPolicy | PolicyHook, min_tasks: int = 0
) -> str | None:
    """The id of the executor to roll, or None when there is nothing to roll."""
    items = candidates(summaries, min_tasks)
    if isinstance(policy, RollPolicy):
        order = ranked(items, policy)
        return order[0].id if order else None
    if not items:
        return None
    chosen = policy(items)
    if chosen is not None and chosen not in {e.id for e in items}:
        raise ValueError(f"the roll policy {policy!r} chose {chosen!r}, which is not a candidate executor")
    return chosen
