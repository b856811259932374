"""The lifecycle manager: applies the lifecycle decisions through the Kubernetes port and the driver.

It keeps the decisions' :class:`LifecycleMemory` between batches and records in it what failed, so the
decider itself stays a pure function.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Mapping

import attrs

from k8s_backend.common import Clock
from k8s_backend.kube.port import PODS, STRATEGIC_MERGE_PATCH, KubernetesApi, NotFoundError
from k8s_backend.lifecycle.decisions import (
    DeletePod,
    LifecycleAction,
    LifecycleDecider,
    LifecycleMemory,
    MarkInactive,
    RemoveFromDriver,
)
from k8s_backend.lifecycle.driver_port import DriverEndpoint
from k8s_backend.lifecycle.executor_events import NO_EVENTS, ExecutorEvents
from k8s_backend.lifecycle.oom import OomBooster
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import INACTIVE_LABEL
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)

@attrs.frozen
class RecordedLoss:
    executor_id: int
    time: float
    exit_code: int
    exit_caused_by_app: bool
    summary: str


class ExecutorPodsLifecycleManager:
    """Turns ended and vanished executor pods into driver notifications and pod cleanup."""

    def __init__(
        self,
        api: KubernetesApi,
        store: SnapshotsStore,
        clock: Clock,
        *,
        namespace: str,
        decider: LifecycleDecider,
        interval: float = 1.0,
        driver: DriverEndpoint | None = None,
        events: ExecutorEvents = NO_EVENTS,
        recent_losses: int = 20,
        oom: OomBooster | None = None,
    ) -> None:
        self._api = api
        self._store = store
        self._clock = clock
        self._namespace = namespace
        self._decider = decider
        # Replaced whole, never mutated: readers on other threads see one batch's memory or the next.
        self._memory = LifecycleMemory()
        self._interval = interval
        self._driver = driver
        self._events = events  # told of every removal, before the driver
        self.recent_losses: collections.deque[RecordedLoss] = collections.deque(maxlen=recent_losses)
        self.oom = oom  # OOM-aware replacements: counts OOM kills, and the loss reason says what it raised

    @property
    def memory(self) -> LifecycleMemory:
        """What the decisions remember after the last batch (and the failures since)."""
        return self._memory

    def start(self) -> None:
        self._store.add_subscriber(self._interval, self.on_new_snapshots)

    def registered_executor_ids(self) -> frozenset[int]:
        """The ids of :meth:`registered_executors` (what the allocator asks of the driver)."""
        return frozenset(self.registered_executors())

    def registered_executors(self) -> Mapping[int, float]:
        """The driver's executors with numeric ids (Spark's driver also lists "driver")."""
        if self._driver is None:
            return {}
        registered: dict[int, float] = {}
        for executor_id, registered_at in self._driver.registered_executors().items():
            if str(executor_id).isdigit():
                registered[int(executor_id)] = registered_at
        return registered

    def on_new_snapshots(self, batch: SnapshotBatch) -> None:
        if self.oom is not None:
            self.oom.observe_batch(batch)
        decision = self._decider.decide(batch, self.registered_executors(), self._clock.now(), self._memory)
        self._memory = decision.memory
        for action in decision.actions:
            self._apply(action)

    def _apply(self, action: LifecycleAction) -> None:
        if isinstance(action, RemoveFromDriver):
            self._remove_from_driver(action)
        elif isinstance(action, DeletePod):
            self._delete_pod(action)
        elif isinstance(action, MarkInactive):
            self._mark_inactive(action)

    def _remove_from_driver(self, action: RemoveFromDriver) -> None:
        loss = action.loss
        raised = None if self.oom is None else self.oom.take(action.executor_id)
        note = None if raised is None else raised.describe()
        if note is not None:  # after the headline, so the one-line summary stays what happened
            headline, _, rest = loss.message.partition("\n")
            loss = attrs.evolve(loss, message=f"{headline}\n{note}.\n{rest}")
        summary = loss.message.strip().splitlines()[0] if loss.message.strip() else ""
        if note is not None:
            summary = f"{summary} ({note})"
        self.recent_losses.append(
            RecordedLoss(
                action.executor_id, self._clock.now(), loss.exit_code, loss.exit_caused_by_app, summary
            )
        )
        log.info("Executor %d is gone: %s", action.executor_id, summary)
        try:
            self._events.removed(action.executor_id, loss)
        except Exception:
            log.exception("Executor-events listener failed for executor %d", action.executor_id)
        if self._driver is not None:
            try:
                self._driver.remove_executor(str(action.executor_id), loss)
            except Exception:
                log.exception(
                    "Could not tell the driver that executor %d is gone; will retry", action.executor_id
                )
                self._memory = self._memory.removal_failed(action.executor_id)

    def _delete_pod(self, action: DeletePod) -> None:
        try:
            self._api.delete(PODS, self._namespace, action.name)
        except NotFoundError:
            pass  # already gone: exactly what we wanted
        except Exception as error:
            log.warning("Deleting executor pod %s failed (%s); will retry", action.name, error)
            self._memory = self._memory.delete_failed(action.executor_id)

    def _mark_inactive(self, action: MarkInactive) -> None:
        patch = {"metadata": {"labels": {INACTIVE_LABEL: "true"}}}
        try:
            self._api.patch(PODS, self._namespace, action.name, patch, patch_type=STRATEGIC_MERGE_PATCH)
        except NotFoundError:
            pass
        except Exception as error:
            log.warning("Labelling executor pod %s inactive failed (%s); will retry", action.name, error)
            self._memory = self._memory.inactivation_failed(action.executor_id)
