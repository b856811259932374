"""Pure lifecycle decisions: which ended executors to report to the driver, which pods to delete or keep.

:class:`LifecycleDecider` reads snapshot batches and returns actions; it does no I/O, so every rule of
Spark's ExecutorPodsLifecycleManager is unit-testable with plain data.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from k8s_backend.driver import ExecutorLoss
from k8s_backend.lifecycle import explain
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


class LifecycleDecider:
    """Decides, batch by batch, what to do about executors whose pods ended or vanished.

    Guarantees: an executor is reported to the driver at most once; a pod is deleted once, and again only
    if it is still there ``delete_retry_interval`` seconds later or the delete call failed.
    """

    def __init__(
        self,
        *,
        container_name: str,
        delete_on_termination: bool = True,
        missing_pod_detect_delta: float = 30.0,
        delete_retry_interval: float = 30.0,
        removed_cache_timeout: float = 180.0,
    ) -> None:
        self._container_name = container_name
        self._delete_on_termination = delete_on_termination
        self._missing_delta_ms = _ms(missing_pod_detect_delta)
        self._delete_retry_interval = delete_retry_interval
        # Executors already reported to the driver, and when: forgotten after the cache timeout once their
        # pods are gone (spark.kubernetes.executor.deletedExecutorsCacheTimeout), so memory stays bounded.
        self._removed: dict[int, float] = {}
        self._removed_cache_timeout = removed_cache_timeout
        self._last_prune = 0.0
        self._now = 0.0
        self._delete_requested: dict[int, float] = {}
        self._inactivated: set[int] = set()
        self._inactivate_retry: set[int] = set()
        self._last_full_snapshot_ts: float | None = None

    def is_removed(self, executor_id: int) -> bool:
        return executor_id in self._removed

    def removal_failed(self, executor_id: int) -> None:
        """Telling the driver failed: report the executor again at the next chance."""
        self._removed.pop(executor_id, None)

    def delete_failed(self, executor_id: int) -> None:
        """The delete call failed: try again at the next batch."""
        self._delete_requested[executor_id] = float("-inf")

    def inactivation_failed(self, executor_id: int) -> None:
        """The label patch failed: try again at the next batch."""
        self._inactivated.discard(executor_id)
        self._inactivate_retry.add(executor_id)

    def decide(
        self, batch: SnapshotBatch, registered: Mapping[int, float], now: float
    ) -> list[LifecycleAction]:
        """The actions for one batch. ``registered``: executor id -> registration time, from the driver."""
        actions: list[LifecycleAction] = []
        self._now = now
        self._forget_old_removals(batch, now)
        for state in batch.updates:
            self._on_state(state, now, actions)
        self._retry_lost_deletes(batch, now, actions)
        self._retry_inactivation(batch, actions)
        snapshot = batch.snapshot
        if batch.resynced and snapshot.full_snapshot_ts != self._last_full_snapshot_ts:
            self._last_full_snapshot_ts = snapshot.full_snapshot_ts
            self._detect_missing(batch, registered, actions)
        return actions

    def _on_state(self, state: ExecutorPodState, now: float, actions: list[LifecycleAction]) -> None:
        executor_id = state.executor_id
        if state.is_inactive:
            self._inactivated.discard(executor_id)
            return
        if state.phase is PodPhase.DELETED:
            self._delete_requested.pop(executor_id, None)
            self._inactivated.discard(executor_id)
            if executor_id not in self._removed:
                code = explain.exit_code_of(state.pod, self._container_name)
                loss = ExecutorLoss(code, False, explain.deleted_message(executor_id))
                actions.append(RemoveFromDriver(executor_id, loss))
                self._removed[executor_id] = self._now
            return
        if state.phase not in (PodPhase.FAILED, PodPhase.SUCCEEDED):
            return
        if executor_id not in self._removed:
            code = explain.exit_code_of(state.pod, self._container_name)
            message = explain.exit_message(state.pod, executor_id, code, self._container_name)
            actions.append(RemoveFromDriver(executor_id, ExecutorLoss(code, True, message)))
            self._removed[executor_id] = self._now
        if self._delete_on_termination:
            # A pod already being deleted needs no second DELETE (SPARK-54197).
            if executor_id not in self._delete_requested and not state.is_being_deleted:
                actions.append(DeletePod(executor_id, state.name))
                self._delete_requested[executor_id] = now
        elif executor_id not in self._inactivated:
            actions.append(MarkInactive(executor_id, state.name))
            self._inactivated.add(executor_id)

    def _forget_old_removals(self, batch: SnapshotBatch, now: float) -> None:
        if not self._removed or now - self._last_prune < self._removed_cache_timeout / 4:
            return
        self._last_prune = now
        pods = batch.snapshot.pods
        expired = [
            i for i, at in self._removed.items() if now - at > self._removed_cache_timeout and i not in pods
        ]
        for executor_id in expired:
            del self._removed[executor_id]

    def _retry_lost_deletes(self, batch: SnapshotBatch, now: float, actions: list[LifecycleAction]) -> None:
        # Only the pods we asked to delete are looked at, so this stays cheap with thousands of pods.
        for executor_id, asked_at in list(self._delete_requested.items()):
            state = batch.snapshot.pods.get(executor_id)
            if state is None or state.phase is PodPhase.DELETED:
                del self._delete_requested[executor_id]
            elif now - asked_at >= self._delete_retry_interval and not state.is_being_deleted:
                actions.append(DeletePod(executor_id, state.name))
                self._delete_requested[executor_id] = now

    def _retry_inactivation(self, batch: SnapshotBatch, actions: list[LifecycleAction]) -> None:
        for executor_id in list(self._inactivate_retry):
            self._inactivate_retry.discard(executor_id)
            state = batch.snapshot.pods.get(executor_id)
            if state is not None and not state.is_inactive and executor_id not in self._inactivated:
                actions.append(MarkInactive(executor_id, state.name))
                self._inactivated.add(executor_id)

    def _detect_missing(
        self, batch: SnapshotBatch, registered: Mapping[int, float], actions: list[LifecycleAction]
    ) -> None:
        polled_ms = _ms(batch.snapshot.full_snapshot_ts)
        for executor_id, registered_at in registered.items():
            if executor_id in batch.snapshot.pods or executor_id in self._removed:
                continue
            registered_ms = _ms(registered_at)
            if polled_ms - registered_ms > self._missing_delta_ms:
                message = explain.missing_message(
                    executor_id, registered_ms, polled_ms, self._missing_delta_ms
                )
                actions.append(RemoveFromDriver(executor_id, ExecutorLoss(-1, False, message)))
                self._removed[executor_id] = self._now
