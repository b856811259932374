"""Executor ids grouped by resource profile and phase, kept current from snapshot batches.

An allocation round needs counts per profile and the pending pods, not every pod: keeping this index up
to date from each batch's changes makes a round cost O(changes + pending pods) instead of O(pods).
A full resync rebuilds it (O(pods), once per polling interval).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from k8s_backend.snapshots.snapshot import ExecutorPodsSnapshot, SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

_EMPTY: frozenset[int] = frozenset()


class PodIndex:
    """Which executor ids are in which (profile, phase), mirroring the current snapshot."""

    def __init__(self) -> None:
        self._where: dict[int, tuple[int, PodPhase]] = {}
        self._groups: dict[int, dict[PodPhase, set[int]]] = {}
        self.max_executor_id = 0

    @classmethod
    def of(cls, snapshot: ExecutorPodsSnapshot) -> PodIndex:
        index = cls()
        index.rebuild(snapshot)
        return index

    def apply(self, batch: SnapshotBatch) -> None:
        """Follow the batch: a rebuild after a full resync (or at first), else only the changed pods."""
        if batch.resynced or batch.first:
            self.rebuild(batch.snapshot)
            return
        pods = batch.snapshot.pods
        for update in batch.updates:
            # The update may be an intermediate state: the index mirrors the current one.
            self._place(update.executor_id, pods.get(update.executor_id))

    def rebuild(self, snapshot: ExecutorPodsSnapshot) -> None:
        self._where.clear()
        self._groups.clear()
        for executor_id, state in snapshot.pods.items():
            self._place(executor_id, state)

    def _place(self, executor_id: int, state: ExecutorPodState | None) -> None:
        old = self._where.pop(executor_id, None)
        if old is not None:
            self._groups[old[0]][old[1]].discard(executor_id)
        if state is None:
            return
        key = (state.resource_profile_id, state.phase)
        self._where[executor_id] = key
        self._groups.setdefault(key[0], {}).setdefault(key[1], set()).add(executor_id)
        self.max_executor_id = max(self.max_executor_id, executor_id)

    def profiles(self) -> list[int]:
        return list(self._groups)

    def ids(self, rp_ids: Iterable[int], phase: PodPhase) -> Iterator[int]:
        """The ids in ``phase`` of the given profiles (do not change the index while iterating)."""
        for rp_id in rp_ids:
            yield from self._groups.get(rp_id, {}).get(phase, _EMPTY)

    def count(self, rp_ids: Iterable[int], phase: PodPhase) -> int:
        return sum(len(self._groups.get(rp_id, {}).get(phase, _EMPTY)) for rp_id in rp_ids)

    def phase_of(self, executor_id: int) -> tuple[int, PodPhase] | None:
        return self._where.get(executor_id)

    def __len__(self) -> int:
        return len(self._where)
