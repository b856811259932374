"""KubernetesClusterSchedulerBackend: the hooks a Spark driver calls, over the parts that do the work.

Construct it with :meth:`KubernetesClusterSchedulerBackend.create` (the composition root, in
:mod:`k8s_backend.wiring`). Every hook returns quickly: Kubernetes calls run on the backend's own
scheduler threads, because the PySpark bridge calls these hooks while Spark holds its locks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from k8s_backend.backend_state import ACCEPTS_REQUESTS, BACKEND_TRANSITIONS, BackendState
from k8s_backend.conf.model import KubernetesConf, ResourceProfile
from k8s_backend.driver import DriverEndpoint, ExecutorLoss
from k8s_backend.errors import BackendStateError
from k8s_backend.executor_ops import ExecutorOperations
from k8s_backend.executors.monitor import ExecutorMonitor
from k8s_backend.gang.gate import GangGate, GateState
from k8s_backend.kube.port import KubernetesApi, Obj
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.scheduling import Cancellable, Clock, Scheduler
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.state_machine import StateMachine
from k8s_backend.stop_sequence import StopSequence

if TYPE_CHECKING:
    from k8s_backend.allocation.allocator import ExecutorPodsAllocator

log = logging.getLogger(__name__)

ApplicationFailedListener = Callable[[str], None]


class KubernetesClusterSchedulerBackend:
    """Manages an application's executor pods; the Python counterpart of Spark's backend of that name."""

    def __init__(
        self,
        conf: KubernetesConf,
        *,
        app_id: str,
        api: KubernetesApi,
        scheduler: Scheduler,
        clock: Clock,
        store: ExecutorPodsSnapshotsStore,
        watch_source: ExecutorPodsWatchSnapshotSource,
        polling_source: ExecutorPodsPollingSnapshotSource,
        allocator: ExecutorPodsAllocator,
        lifecycle: ExecutorPodsLifecycleManager,
        operations: ExecutorOperations,
        stop_sequence: StopSequence,
        monitor: ExecutorMonitor,
        driver: DriverEndpoint | None = None,
        config_map: Obj | None = None,
        pod_group: Obj | None = None,
        recover: Callable[[], int] | None = None,
        gate: GangGate | None = None,
        on_application_failed: ApplicationFailedListener | None = None,
    ) -> None:
        self.conf = conf
        self._app_id = app_id
        self.api = api
        self._scheduler = scheduler
        self._clock = clock
        self.store = store
        self.watch_source = watch_source
        self.polling_source = polling_source
        self.allocator = allocator
        self.lifecycle = lifecycle
        self._operations = operations
        self._stop_sequence = stop_sequence
        self._driver = driver
        self._config_map = config_map
        self._pod_group = pod_group
        self._recover = recover
        self.monitor = monitor
        self._gate = gate
        self._gate_started = 0.0
        self._gate_state = GateState.HOLDING
        self._gate_task: Cancellable | None = None
        self._gate_lock = threading.Lock()
        self._on_application_failed = on_application_failed
        self._machine = StateMachine("backend", BackendState.NEW, BACKEND_TRANSITIONS, clock.now)
        self.failure_reason: str | None = None

    @classmethod
    def create(
        cls,
        conf: KubernetesConf | Mapping[str, str] | Any,
        *,
        app_id: str,
        driver_url: str,
        api: KubernetesApi | None = None,
        driver: DriverEndpoint | None = None,
        clock: Clock | None = None,
        scheduler: Scheduler | None = None,
        on_application_failed: ApplicationFailedListener | None = None,
        watch_on_scheduler: bool = False,
    ) -> KubernetesClusterSchedulerBackend:
        """Build a backend and everything it owns (the composition root).

        ``conf``: Spark properties (a mapping or a ``pyspark.SparkConf``) or a :class:`KubernetesConf`.
        ``api=None`` uses the official client (kubeconfig or in-cluster). ``driver=None`` runs without a
        driver: executors are tracked from their pods alone. ``clock``, ``scheduler`` and
        ``watch_on_scheduler`` (run the watch loop as scheduler tasks, not a thread) are for tests.
        Raises :class:`k8s_backend.ConfigError` before anything is created on the cluster.
        """
        from k8s_backend.wiring import build_backend

        return build_backend(
            cls,
            conf,
            app_id=app_id,
            driver_url=driver_url,
            api=api,
            driver=driver,
            clock=clock,
            scheduler=scheduler,
            on_application_failed=on_application_failed,
            watch_on_scheduler=watch_on_scheduler,
        )

    # -- state ---------------------------------------------------------------------------------------

    @property
    def state(self) -> BackendState:
        return self._machine.state

    def _require(self, hook: str, allowed: Collection[BackendState]) -> None:
        if self._machine.state not in allowed:
            names = ", ".join(sorted(s.value for s in allowed))
            raise BackendStateError(
                f"{hook}() cannot be called while the backend is {self._machine.state.value} "
                f"(allowed when: {names})"
            )

    # -- hooks the driver calls ----------------------------------------------------------------------

    def application_id(self) -> str:
        return self._app_id

    def start(self) -> None:
        """Start in a fixed order: the PodGroup and config map (SPARK-38794), recovery of pods left by an
        earlier driver, then allocation, then the sources."""
        self._require("start", {BackendState.NEW})
        self._machine.transition(BackendState.STARTING)
        try:
            if self._pod_group is not None:
                self._operations.create_pod_group(self._pod_group)
            if self._config_map is not None:
                self._operations.create_config_map(self._config_map)
            if self._recover is not None:
                self.allocator.advance_executor_id_counter(self._recover())
            if self.conf.driver.pod_name:
                self._operations.wait_for_driver_ready(
                    self.conf.driver.pod_name, self.conf.allocation.driver_readiness_timeout
                )
            self.allocator.start()
            self.allocator.set_total_expected_executors({0: self.conf.scaling.initial_target})
            self.lifecycle.start()
            self.monitor.start()
            self.watch_source.start(self._app_id)
            self.polling_source.start(self._app_id)
            if self._gate is not None:
                self._gate_started = self._clock.now()
                self._gate_task = self._scheduler.schedule_with_fixed_delay(1.0, 1.0, self._tick_gate)
        except Exception as error:
            self._fail(f"the backend could not start: {error}")
            raise
        self._machine.transition_if_allowed(BackendState.RUNNING)  # not if it failed meanwhile
        log.info("Kubernetes backend started for application %s", self._app_id)

    def stop(self) -> None:
        """Stop everything and clean up; safe to call more than once."""
        if not self._machine.transition_if_allowed(BackendState.STOPPING):
            return  # already stopping or stopped (maybe on another thread)
        self._stop_sequence.run()
        self._machine.transition(BackendState.STOPPED)

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        """Make a custom resource profile's executor size known before targets mention it."""
        self.allocator.register_resource_profile(profile)

    def request_total_executors(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> bool:
        """Set the total executor count wanted per resource profile id."""
        self._require("request_total_executors", ACCEPTS_REQUESTS)
        for profile_id, total in targets.items():
            if total < 0:
                raise ValueError(f"resource profile {profile_id}: a target cannot be negative ({total})")
        self.allocator.set_total_expected_executors(dict(targets), profiles)
        return True

    def kill_executors(self, executor_ids: Sequence[str]) -> bool:
        """Remove executors: label them, tell the driver, force-delete them after the grace period."""
        self._require("kill_executors", ACCEPTS_REQUESTS | {BackendState.FAILED})
        self.monitor.killed(executor_ids)
        self._operations.kill(list(executor_ids))
        return True

    def decommission_executors(self, executor_ids: Sequence[str]) -> bool:
        """Label decommissioning executors (for PDBs and deletion cost); the driver does the rest."""
        self._require("decommission_executors", ACCEPTS_REQUESTS | {BackendState.FAILED})
        self.monitor.decommissioning(executor_ids)
        self._operations.label_decommissioning(list(executor_ids))
        return True

    def is_executor_excluded(self, executor_id: str) -> bool:
        """Refuse registration from executors the allocator already deleted as excess."""
        return executor_id.isdigit() and self.allocator.is_deleted(int(executor_id))

    def sufficient_resources_registered(self) -> bool:
        """Whether enough executors registered to start scheduling (min registered ratio, as Spark).

        With the built-in gang start, only once the gang runs (or a Soft gang timed out).
        """
        if self._gate is not None:
            return self._check_gate() is not GateState.HOLDING and self.failure_reason is None
        registered = self._registered_count()
        return registered >= self.conf.scaling.initial_target * self.conf.scaling.min_registered_ratio

    def _registered_count(self) -> int:
        if self._driver is not None:
            return sum(1 for i in self._driver.registered_executors() if str(i).isdigit())
        return len(self.store.current().in_phase(PodPhase.RUNNING))

    def _tick_gate(self) -> None:
        self._check_gate()

    def _check_gate(self) -> GateState:
        """Re-evaluate the all-or-nothing start; fail (Hard) or go on (Soft) on timeout, once."""
        gate = self._gate
        running = self._registered_count()
        with self._gate_lock:  # the driver's thread and the scheduler's both check the gate
            if gate is None or self._gate_state is not GateState.HOLDING:
                return self._gate_state
            now = self._clock.now()
            state = gate.decide(running, self._gate_started, now)
            if state is GateState.HOLDING:
                return state
            self._gate_state = state
        if self._gate_task is not None:
            self._gate_task.cancel()
        if state is GateState.OPEN:
            log.info("Gang of %d executors is running", gate.min_executors)
        elif gate.hard:
            # Every pending executor's reason, however short the gang timeout is next to stuckTimeout.
            reasons = self.monitor.stuck_reasons(min_wait=0)
            self._fail(gate.failure_reason(running, now - self._gate_started, reasons))
        else:
            log.warning(
                "Gang timed out (Soft) with %d of %d executors running; going on with them",
                running, gate.min_executors,
            )
        return state

    # -- failure -------------------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        if not self._machine.transition_if_allowed(BackendState.FAILED, reason):
            return
        self.failure_reason = reason
        log.error("Application %s failed: %s", self._app_id, reason)
        listeners: list[ApplicationFailedListener] = []
        if self._on_application_failed is not None:
            listeners.append(self._on_application_failed)
        driver_hook = getattr(self._driver, "application_failed", None)
        if callable(driver_hook):
            listeners.append(driver_hook)
        for listener in listeners:
            try:
                listener(reason)
            except Exception:
                log.exception("Application-failed listener raised")

    def application_failed(self, reason: str) -> None:
        """Called by the allocator when the application cannot go on (e.g. too many executor failures)."""
        self._fail(reason)

    # -- observation ---------------------------------------------------------------------------------

    def executor_removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        """Lifecycle listener hook (kept for subclasses and later state tracking)."""

    def status(self) -> dict[str, Any]:
        """A plain summary for logs, CLIs and tests."""
        snapshot = self.store.current()
        counts: dict[str, int] = {phase.value: 0 for phase in PodPhase}
        for state in snapshot.pods.values():
            counts[state.phase.value] += 1
        return {
            "app_id": self._app_id,
            "state": self._machine.state.value,
            "failure_reason": self.failure_reason,
            "allocator": self.allocator.status(),
            "pods": counts,
            "recent_losses": [
                {
                    "executor_id": loss.executor_id,
                    "time": loss.time,
                    "exit_code": loss.exit_code,
                    "exit_caused_by_app": loss.exit_caused_by_app,
                    "reason": loss.summary,
                }
                for loss in tuple(self.lifecycle.recent_losses)  # the lifecycle thread appends meanwhile
            ],
            "executors": self.monitor.summary(),
            "gang": None if self._gate is None else {
                "min_executors": self._gate.min_executors,
                "hard": self._gate.hard,
                "state": self._gate_state.value,
            },
            "watch": self.watch_source.health(),
            "polls": self.polling_source.polls,
            "history": [
                {"time": t.time, "from": t.source.value, "to": t.target.value, "reason": t.reason}
                for t in self._machine.history()
            ],
        }
