"""SchedulerBackendHooks: the hooks a Spark driver calls, over the parts that do the work.

This module only defines the hooks over parts it is given; :mod:`k8s_backend.assembly.wiring` (the composition
root) builds the parts and offers ``KubernetesClusterSchedulerBackend.create``. Every hook returns
quickly: Kubernetes calls run on the backend's own scheduler threads, because the PySpark bridge calls
these hooks while Spark holds its locks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

import attrs

from k8s_backend.allocation.pods_allocator import PodsAllocator
from k8s_backend.backend.state import ACCEPTS_REQUESTS, BACKEND_TRANSITIONS, BackendState
from k8s_backend.common import Clock
from k8s_backend.common.failure_sink import FAILURE_RECORD, FailureSink
from k8s_backend.common.state_machine import StateMachine
from k8s_backend.common.stop_sequence import StopSequence
from k8s_backend.conf.model import ResourceProfile, ScalingConf
from k8s_backend.errors import BackendStateError
from k8s_backend.gang.gate import GateState
from k8s_backend.gang.start import GangStart
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle.autoscaler_hints_writer import AutoscalerHintsWriter
from k8s_backend.lifecycle.disruption_watcher import DisruptionWatcher
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.executor_events import ExecutorEvents
from k8s_backend.lifecycle.executor_ops import ExecutorOperations
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.lifecycle.roller import ExecutorRoller
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore, SnapshotsStore
from k8s_backend.tracking.monitor import ExecutorMonitor
from k8s_backend.tracking.progress import ExecutorProgress, ProgressReporter
from k8s_backend.tracking.times import iso_time

log = logging.getLogger(__name__)

ApplicationFailedListener = Callable[[str], None]


class WatchSource(Protocol):
    """What the backend needs of the watch source (:class:`ExecutorPodsWatchSnapshotSource`)."""

    def start(self, app_id: str) -> None: ...

    def stop(self, timeout: float = 5.0) -> None: ...

    def health(self) -> dict[str, object]: ...


@attrs.frozen
class BackendParts:
    """The parts the backend drives, built and wired by the composition root."""

    store: ExecutorPodsSnapshotsStore
    watch_source: WatchSource
    polling_source: ExecutorPodsPollingSnapshotSource
    allocator: PodsAllocator
    lifecycle: ExecutorPodsLifecycleManager
    operations: ExecutorOperations
    monitor: ExecutorMonitor
    events: ExecutorEvents  # the one route by which executors' changes reach the monitor and metrics
    stop_sequence: StopSequence
    registered_executors: Callable[[], int]  # executors registered with the driver (or running pods)
    disruptions: DisruptionWatcher | None = None  # decommission on the cluster's notice (None: off)
    autoscaler_hints: AutoscalerHintsWriter | None = None  # "not me" to autoscalers (None: off)
    roller: ExecutorRoller | None = None  # executor rolling (None: off)


@attrs.frozen
class StartPlan:
    """What :meth:`KubernetesClusterSchedulerBackend.start` creates and waits for before allocating."""

    pod_group: Obj | None = None  # the Volcano PodGroup, created first (SPARK-38794)
    config_map: Obj | None = None  # the executor ConfigMap
    auth_secret: Obj | None = attrs.field(default=None, repr=False)  # the executor auth Secret
    heartbeat: Callable[[], object] | None = None  # creates a client-mode driver's heartbeat Lease
    recover: Callable[[], int] | None = None  # adopts an earlier driver's pods; returns the next id
    wait_for_driver: Callable[[], object] | None = None  # waits (briefly) for the driver pod to be Ready
    progress_interval: float = 0.0  # spark.kubernetes.progress.interval: the progress line; 0: none
    # A cluster-mode driver starts writing its registered executors on its pod (for `k8s-backend status`).
    publish_registrations: Callable[[SnapshotsStore], object] | None = None


class SchedulerBackendHooks:
    """The hooks a driver calls (start, stop, request_total_executors, kill, decommission) over the parts
    it is given. The public class is its subclass :class:`k8s_backend.KubernetesClusterSchedulerBackend`,
    which the composition root builds with ``create``.
    """

    def __init__(
        self,
        *,
        app_id: str,
        scaling: ScalingConf,
        parts: BackendParts,
        plan: StartPlan,
        failures: FailureSink,
        clock: Clock,
        gang: GangStart | None = None,
        failure_listeners: Sequence[ApplicationFailedListener] = (),
    ) -> None:
        """``failures``: the sink every part reports to; ``failure_listeners`` are told (once) when the
        backend fails the application, unless it is already stopping."""
        self._app_id = app_id
        self._scaling = scaling
        self.parts = parts
        self._plan = plan
        self._gang = gang
        self._failure_listeners = tuple(failure_listeners)
        self._machine = StateMachine("backend", BackendState.NEW, BACKEND_TRANSITIONS, clock.now)
        self.failure_reason: str | None = None
        failures.add_listener(self._fail)
        self._failures = failures
        self._clock = clock
        self._not_starting = threading.Event()  # clear while start() runs
        self._not_starting.set()
        self._stopped = threading.Event()
        self.progress: ProgressReporter | None = None
        if plan.progress_interval > 0:
            self.progress = ProgressReporter(self._progress, clock, interval=plan.progress_interval)

    # -- parts, for status, tests and tools ----------------------------------------------------------

    @property
    def store(self) -> ExecutorPodsSnapshotsStore:
        return self.parts.store

    @property
    def watch_source(self) -> WatchSource:
        return self.parts.watch_source

    @property
    def polling_source(self) -> ExecutorPodsPollingSnapshotSource:
        return self.parts.polling_source

    @property
    def allocator(self) -> PodsAllocator:
        return self.parts.allocator

    @property
    def lifecycle(self) -> ExecutorPodsLifecycleManager:
        return self.parts.lifecycle

    @property
    def monitor(self) -> ExecutorMonitor:
        return self.parts.monitor

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
        """Start in a fixed order: the PodGroup and config map (SPARK-38794), a client-mode driver's
        heartbeat Lease, recovery of pods left by an earlier driver, then allocation, then the sources.

        A stop() that comes meanwhile (from another thread) ends the start between two steps, and
        waits for it, so nothing is created after the cleanup.
        """
        self._require("start", {BackendState.NEW})
        self._not_starting.clear()
        try:
            self._machine.transition(BackendState.STARTING)
            self._start_steps()
        finally:
            self._not_starting.set()
        if self._machine.transition_if_allowed(BackendState.RUNNING):  # not if it failed or stops
            log.info("Kubernetes backend started for application %s", self._app_id)

    def _start_steps(self) -> None:
        parts, plan = self.parts, self._plan
        steps: list[Callable[[], object]] = []
        if plan.pod_group is not None:
            pod_group = plan.pod_group
            steps.append(lambda: parts.operations.create_pod_group(pod_group))
        if plan.config_map is not None:
            config_map = plan.config_map
            steps.append(lambda: parts.operations.create_config_map(config_map))
        if plan.auth_secret is not None:  # before the pods that read it
            auth_secret = plan.auth_secret
            steps.append(lambda: parts.operations.create_auth_secret(auth_secret))
        if plan.heartbeat is not None:  # before the executor pods that name it (gc spares young objects)
            steps.append(plan.heartbeat)
        if plan.recover is not None:
            recover = plan.recover
            steps.append(lambda: parts.allocator.advance_executor_id_counter(recover()))
        if plan.wait_for_driver is not None:
            steps.append(plan.wait_for_driver)
        steps += [
            parts.allocator.start,
            lambda: parts.allocator.set_total_expected_executors({0: self._scaling.initial_target}),
            lambda: parts.monitor.target(self._scaling.initial_target),
            parts.lifecycle.start,
            self._start_disruptions,
            self._start_autoscaler_hints,
            parts.monitor.start,
            self._start_roller,
            self._start_progress,
            self._start_publishing,
            lambda: parts.watch_source.start(self._app_id),
            lambda: parts.polling_source.start(self._app_id),
        ]
        if self._gang is not None:
            steps.append(self._gang.start)
        try:
            for step in steps:
                if self._machine.state is BackendState.STOPPING:
                    log.info("stop() came while the backend was starting: the rest of the start is skipped")
                    return
                step()
        except Exception as error:
            self._failures.report(f"the backend could not start: {error}")
            raise

    def _start_disruptions(self) -> None:
        if self.parts.disruptions is not None:
            self.parts.disruptions.start()

    def _start_autoscaler_hints(self) -> None:
        if self.parts.autoscaler_hints is not None:
            self.parts.autoscaler_hints.start()
    def _start_roller(self) -> None:
        # After the allocator, lifecycle and monitor: its first look is one interval later anyway.
        if self.parts.roller is not None:
            self.parts.roller.start()

    def stop(self) -> None:
        """Stop everything and clean up, within ``spark.kubernetes.stopTimeout`` (cleanup still under
        way then goes on in the background). Safe to call more than once and from several threads: a
        second call waits for the first one's cleanup, within the same bound."""
        sequence = self.parts.stop_sequence
        bound = sequence.timeout
        if not self._machine.transition_if_allowed(BackendState.STOPPING):
            self._stopped.wait(bound)  # already stopping (maybe on another thread), or stopped
            return
        started = self._clock.now()
        if not self._not_starting.wait(bound):
            log.warning("start() is still running; cleaning up without waiting for it any longer")
        left = None if bound is None else max(0.0, bound - (self._clock.now() - started))
        sequence.run(left)
        self._machine.transition(BackendState.STOPPED)
        self._stopped.set()

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        """Make a custom resource profile's executor size known before targets mention it."""
        self.parts.allocator.register_resource_profile(profile)

    def request_total_executors(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> bool:
        """Set the total executor count wanted per resource profile id."""
        self._require("request_total_executors", ACCEPTS_REQUESTS)
        for profile_id, total in targets.items():
            if total < 0:
                raise ValueError(f"resource profile {profile_id}: a target cannot be negative ({total})")
        self.parts.allocator.set_total_expected_executors(dict(targets), profiles)
        self.parts.monitor.target(sum(targets.values()))
        return True

    def kill_executors(self, executor_ids: Sequence[str]) -> bool:
        """Remove executors: label them, tell the driver, force-delete them after the grace period."""
        self._require("kill_executors", ACCEPTS_REQUESTS | {BackendState.FAILED})
        self.parts.events.killed(executor_ids)
        self.parts.allocator.mark_for_removal([int(i) for i in executor_ids if i.isdigit()])
        self.parts.operations.kill(list(executor_ids))
        return True

    def decommission_executors(self, executor_ids: Sequence[str]) -> bool:
        """Label decommissioning executors (for PDBs and deletion cost); the driver does the rest."""
        self._require("decommission_executors", ACCEPTS_REQUESTS | {BackendState.FAILED})
        self.parts.events.decommissioning(executor_ids)
        self.parts.operations.label_decommissioning(list(executor_ids))
        return True

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        """Spark removes a decommissioning executor for ``spark_reason`` (the executor's own "Finished
        decommissioning" once its blocks migrated, or another reason): the timeline says which."""
        self.parts.events.decommission_ended(executor_id, spark_reason)

    def generate_executor_id(self, pod_name: str) -> int:
        """Spark's GenerateExecID, for an executor whose id is EXECID (statefulset/deployment allocators)."""
        return self.parts.allocator.generate_executor_id(pod_name)

    def is_executor_excluded(self, executor_id: str) -> bool:
        """Refuse registration from executors the allocator already deleted as excess."""
        return executor_id.isdigit() and self.parts.allocator.is_deleted(int(executor_id))

    def sufficient_resources_registered(self) -> bool:
        """Whether enough executors registered to start scheduling (min registered ratio, as Spark).

        With the built-in gang start, only once the gang runs (or a Soft gang timed out).
        """
        if self._gang is not None:
            return self._gang.check() is not GateState.HOLDING and self.failure_reason is None
        registered = self.parts.registered_executors()
        return registered >= self._scaling.initial_target * self._scaling.min_registered_ratio

    # -- failure -------------------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        """The failure sink's listener: fail the application unless it is already stopping."""
        if not self._machine.transition_if_allowed(BackendState.FAILED, reason):
            return
        self.failure_reason = reason
        log.error("Application %s failed: %s", self._app_id, reason, extra=FAILURE_RECORD)
        for listener in self._failure_listeners:
            try:
                listener(reason)
            except Exception:
                log.exception("Application-failed listener raised")

    def application_failed(self, reason: str) -> None:
        """Fail the application from outside the parts (reported through the same sink, so once)."""
        self._failures.report(reason)

    # -- observation ---------------------------------------------------------------------------------

    def executor_removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        """Lifecycle listener hook (kept for subclasses and later state tracking)."""

    def _start_progress(self) -> None:
        if self.progress is not None:
            self.progress.start(self.parts.store)

    def _start_publishing(self) -> None:
        if self._plan.publish_registrations is not None:
            self._plan.publish_registrations(self.parts.store)

    def _progress(self) -> ExecutorProgress:
        """What the progress line shows now."""
        counts, reasons = self.parts.monitor.progress()
        targets: dict[int, int] = self.parts.allocator.status()["targets"]
        requested, registered = sum(targets.values()), self.parts.registered_executors()
        return ExecutorProgress.of(counts, reasons, requested=requested, registered=registered)

    def status(self) -> dict[str, Any]:
        """A plain summary for logs, CLIs and tests."""
        parts = self.parts
        snapshot = parts.store.current()
        counts: dict[str, int] = {phase.value: 0 for phase in PodPhase}
        for state in snapshot.pods.values():
            counts[state.phase.value] += 1
        return {
            "app_id": self._app_id,
            "state": self._machine.state.value,
            "failure_reason": self.failure_reason,
            "allocator": parts.allocator.status(),
            "pods": counts,
            "recent_losses": [
                {
                    "executor_id": loss.executor_id,
                    "time": iso_time(loss.time),
                    "exit_code": loss.exit_code,
                    "exit_caused_by_app": loss.exit_caused_by_app,
                    "reason": loss.summary,
                }
                for loss in tuple(parts.lifecycle.recent_losses)  # the lifecycle thread appends meanwhile
            ],
            "executors": parts.monitor.summary(),
            "gang": None if self._gang is None else self._gang.status(),
            "disruptions": None if parts.disruptions is None else parts.disruptions.status(),
            "roller": None if parts.roller is None else parts.roller.status(),
            "oom": None if parts.lifecycle.oom is None else parts.lifecycle.oom.status(),
            "autoscaler_hints": None if parts.autoscaler_hints is None else parts.autoscaler_hints.status(),
            "watch": parts.watch_source.health(),
            "polls": parts.polling_source.polls,
            "history": [
                {"time": iso_time(t.time), "from": t.source.value, "to": t.target.value, "reason": t.reason}
                for t in self._machine.history()
            ],
        }
