"""Pure lifecycle decisions: which ended executors to report to the driver, which pods to delete or keep.

:class:`LifecycleDecider` is frozen settings; its :meth:`~LifecycleDecider.decide` maps a snapshot batch,
the driver's registered executors, the time and the :class:`LifecycleMemory` of earlier rounds to the
actions plus the next memory, like the allocator's ``plan_round``. Nothing here does I/O or keeps state:
the manager applies the actions and keeps the memory, so every rule of Spark's
ExecutorPodsLifecycleManager is unit-testable with plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from k8s_backend.lifecycle import explain
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase


@attrs.frozen
class RemoveFromDriver:
    executor_id: int
    loss: ExecutorLoss


@attrs.frozen
class DeletePod:
    executor_id: int
    name: str


@attrs.frozen
class MarkInactive:
    """Label a kept pod ``spark-exec-inactive=true`` so sources stop listing it (deleteOnTermination off)."""

    executor_id: int
    name: str


LifecycleAction = RemoveFromDriver | DeletePod | MarkInactive


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _frozen_map(value: Mapping[int, float]) -> Mapping[int, float]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class LifecycleMemory:
    """What the lifecycle decisions remember between batches; immutable, every change makes a new one.

    ``removed``: executors already reported to the driver, and when; forgotten after the cache timeout
    once their pods are gone (spark.kubernetes.executor.deletedExecutorsCacheTimeout), so memory stays
    bounded. ``delete_requested``: when each pod's DELETE was sent (``-inf``: it failed, send it again).
    ``inactivated``: kept pods labelled inactive; ``inactivate_retry``: kept pods whose label patch
    failed. ``last_prune``: when ``removed`` was last pruned. ``last_full_snapshot_ts``: the full resync
    last searched for missing pods.
    """

    removed: Mapping[int, float] = attrs.field(factory=dict, converter=_frozen_map)
    delete_requested: Mapping[int, float] = attrs.field(factory=dict, converter=_frozen_map)
    inactivated: frozenset[int] = frozenset()
    inactivate_retry: frozenset[int] = frozenset()
    last_prune: float = 0.0
    last_full_snapshot_ts: float | None = None

    def is_removed(self, executor_id: int) -> bool:
        return executor_id in self.removed

    def removal_failed(self, executor_id: int) -> LifecycleMemory:
        """Telling the driver failed: report the executor again at the next chance."""
        if executor_id not in self.removed:
            return self
        kept = {i: at for i, at in self.removed.items() if i != executor_id}
        return attrs.evolve(self, removed=MappingProxyType(kept))

    def delete_failed(self, executor_id: int) -> LifecycleMemory:
        """The delete call failed: try again at the next batch."""
        retry = {**self.delete_requested, executor_id: float("-inf")}
        return attrs.evolve(self, delete_requested=MappingProxyType(retry))

    def inactivation_failed(self, executor_id: int) -> LifecycleMemory:
        """The label patch failed: try again at the next batch."""
        return attrs.evolve(
            self,
            inactivated=self.inactivated - {executor_id},
            inactivate_retry=self.inactivate_retry | {executor_id},
        )


NOTHING_REMEMBERED = LifecycleMemory()


@attrs.frozen
class LifecycleDecision:
    """The actions for one batch, in order, and the memory to decide the next batch with."""

    actions: tuple[LifecycleAction, ...]
    memory: LifecycleMemory


@attrs.frozen(kw_only=True)
class LifecycleDecider:
    """The lifecycle settings, frozen; :meth:`decide` is a pure function of its arguments and them.

    Guarantees, given each decision's memory is passed to the next: an executor is reported to the driver
    at most once; a pod is deleted once, and again only if it is still there ``delete_retry_interval``
    seconds later or the delete call failed. Durations are in seconds.
    """

    container_name: str
    delete_on_termination: bool = True
    missing_pod_detect_delta: float = 30.0
    delete_retry_interval: float = 30.0
    removed_cache_timeout: float = 180.0

    def decide(
        self,
        batch: SnapshotBatch,
        registered: Mapping[int, float],
        now: float,
        memory: LifecycleMemory = NOTHING_REMEMBERED,
    ) -> LifecycleDecision:
        """The actions for one batch. ``registered``: executor id -> registration time, from the driver.

        ``memory`` is the previous decision's (the default: a first batch's); the guarantees above hold
        only when every decision's memory is passed to the next one.
        """
        return _Round(self, batch, now, memory).run(registered)


class _Round:
    """One :meth:`LifecycleDecider.decide` call's working copies; only the frozen decision outlives it."""

    def __init__(
        self, settings: LifecycleDecider, batch: SnapshotBatch, now: float, memory: LifecycleMemory
    ) -> None:
        self.settings = settings
        self.batch = batch
        self.now = now
        self.removed = dict(memory.removed)
        self.delete_requested = dict(memory.delete_requested)
        self.inactivated = set(memory.inactivated)
        self.inactivate_retry = set(memory.inactivate_retry)
        self.last_prune = memory.last_prune
        self.last_full_snapshot_ts = memory.last_full_snapshot_ts
        self.actions: list[LifecycleAction] = []

    def run(self, registered: Mapping[int, float]) -> LifecycleDecision:
        self._forget_old_removals()
        for state in self.batch.updates:
            self._on_state(state)
        self._retry_lost_deletes()
        self._retry_inactivation()
        snapshot = self.batch.snapshot
        if self.batch.resynced and snapshot.full_snapshot_ts != self.last_full_snapshot_ts:
            self.last_full_snapshot_ts = snapshot.full_snapshot_ts
            self._detect_missing(registered)
        memory = LifecycleMemory(
            removed=MappingProxyType(self.removed),
            delete_requested=MappingProxyType(self.delete_requested),
            inactivated=frozenset(self.inactivated),
            inactivate_retry=frozenset(self.inactivate_retry),
            last_prune=self.last_prune,
            last_full_snapshot_ts=self.last_full_snapshot_ts,
        )
        return LifecycleDecision(tuple(self.actions), memory)

    def _remove(self, executor_id: int, loss: ExecutorLoss) -> None:
        self.actions.append(RemoveFromDriver(executor_id, loss))
        self.removed[executor_id] = self.now

    def _on_state(self, state: ExecutorPodState) -> None:
        executor_id = state.executor_id
        container = self.settings.container_name
        if state.is_inactive:
            self.inactivated.discard(executor_id)
            return
        if state.phase is PodPhase.DELETED:
            self.delete_requested.pop(executor_id, None)
            self.inactivated.discard(executor_id)
            if executor_id not in self.removed:
                code = explain.exit_code_of(state.pod, container)
                self._remove(executor_id, ExecutorLoss(code, False, explain.deleted_message(executor_id)))
            return
        if state.phase not in (PodPhase.FAILED, PodPhase.SUCCEEDED):
            return
        if executor_id not in self.removed:
            code = explain.exit_code_of(state.pod, container)
            message = explain.exit_message(state.pod, executor_id, code, container)
            self._remove(executor_id, ExecutorLoss(code, True, message))
        if self.settings.delete_on_termination:
            # A pod already being deleted needs no second DELETE (SPARK-54197).
            if executor_id not in self.delete_requested and not state.is_being_deleted:
                self.actions.append(DeletePod(executor_id, state.name))
                self.delete_requested[executor_id] = self.now
        elif executor_id not in self.inactivated:
            self.actions.append(MarkInactive(executor_id, state.name))
            self.inactivated.add(executor_id)

    def _forget_old_removals(self) -> None:
        timeout = self.settings.removed_cache_timeout
        # Pruning looks at every remembered executor, so it runs only every quarter of the timeout.
        if not self.removed or self.now - self.last_prune < timeout / 4:
            return
        self.last_prune = self.now
        pods = self.batch.snapshot.pods
        expired = [i for i, at in self.removed.items() if self.now - at > timeout and i not in pods]
        for executor_id in expired:
            del self.removed[executor_id]

    def _retry_lost_deletes(self) -> None:
        # Only the pods we asked to delete are looked at, so this stays cheap with thousands of pods.
        for executor_id, asked_at in list(self.delete_requested.items()):
            state = self.batch.snapshot.pods.get(executor_id)
            if state is None or state.phase is PodPhase.DELETED:
                del self.delete_requested[executor_id]
            elif self.now - asked_at >= self.settings.delete_retry_interval and not state.is_being_deleted:
                self.actions.append(DeletePod(executor_id, state.name))
                self.delete_requested[executor_id] = self.now

    def _retry_inactivation(self) -> None:
        for executor_id in sorted(self.inactivate_retry):
            self.inactivate_retry.discard(executor_id)
            state = self.batch.snapshot.pods.get(executor_id)
            if state is not None and not state.is_inactive and executor_id not in self.inactivated:
                self.actions.append(MarkInactive(executor_id, state.name))
                self.inactivated.add(executor_id)

    def _detect_missing(self, registered: Mapping[int, float]) -> None:
        # Pods the store held and a list dropped arrive as DELETED updates (already in ``removed`` by
        # now); this finds the registered executors whose pods the store never held (Spark's check).
        polled_ms = _ms(self.batch.snapshot.full_snapshot_ts)
        delta_ms = _ms(self.settings.missing_pod_detect_delta)
        for executor_id, registered_at in registered.items():
            if executor_id in self.batch.snapshot.pods or executor_id in self.removed:
                continue
            registered_ms = _ms(registered_at)
            if polled_ms - registered_ms > delta_ms:
                message = explain.missing_message(executor_id, registered_ms, polled_ms, delta_ms)
                self._remove(executor_id, ExecutorLoss(-1, False, message))
