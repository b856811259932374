"""Immutable views of the executor pods, and the batches subscribers receive."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs

from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

_EMPTY: Mapping[int, ExecutorPodState] = MappingProxyType({})


@attrs.frozen
class ExecutorPodsSnapshot:
    """Executor id -> pod state at one moment, plus when the last full resync happened.

    ``full_snapshot_ts`` changes only when a full list replaced the view; the lifecycle manager uses it to
    detect executors the driver registered whose pods the view lacks. (A pod the view held and a list
    dropped is delivered as DELETED by the store, to every subscriber.)
    """

    pods: Mapping[int, ExecutorPodState] = _EMPTY
    full_snapshot_ts: float = 0.0

    @classmethod
    def of(cls, states: Iterable[ExecutorPodState], full_snapshot_ts: float = 0.0) -> ExecutorPodsSnapshot:
        return cls(MappingProxyType({s.executor_id: s for s in states}), full_snapshot_ts)

    def with_update(self, state: ExecutorPodState) -> ExecutorPodsSnapshot:
        """A copy with one executor replaced; ``full_snapshot_ts`` is kept (Spark's withUpdate)."""
        pods = dict(self.pods)
        pods[state.executor_id] = state
        return ExecutorPodsSnapshot(MappingProxyType(pods), self.full_snapshot_ts)

    def in_phase(self, *phases: PodPhase) -> list[ExecutorPodState]:
        return [s for s in self.pods.values() if s.phase in phases]

    def __len__(self) -> int:
        return len(self.pods)


EMPTY_SNAPSHOT = ExecutorPodsSnapshot()


@attrs.frozen
class SnapshotBatch:
    """What a subscriber receives at each delivery.

    ``updates`` are the pod states that changed since this subscriber's previous delivery, in the order
    they were observed (a pod may appear more than once); ``snapshot`` is the current view.
    Spark hands subscribers every intermediate snapshot, which costs O(pods) per event; the changes plus
    one current view carry the same information at O(1) per event.
    """

    updates: tuple[ExecutorPodState, ...]
    snapshot: ExecutorPodsSnapshot
    resynced: bool = False  # a full resync replaced the view since the previous delivery
    first: bool = False  # the subscriber's first delivery
    # With ``resynced``: the resourceVersion of the newest full list the view was built from (None when
    # unknown). A pod created at or before it and missing from the view is gone, even if no watch event
    # ever said so; the allocator relies on it to forget such pods at once instead of after
    # spark.kubernetes.allocation.executor.timeout.
    resync_resource_version: int | None = None

    @property
    def changed(self) -> bool:
        """Whether anything was observed since the previous delivery (Spark: a non-empty batch)."""
        return bool(self.updates) or self.resynced or self.first

    def seen_executor_ids(self) -> set[int]:
        """Every executor id that appeared in an update or in the current view."""
        ids = set(self.snapshot.pods)
        ids.update(s.executor_id for s in self.updates)
        return ids
