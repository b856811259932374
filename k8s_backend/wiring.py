"""The composition root: the one place that builds and wires the backend's parts (Spark's
KubernetesClusterManager), and the public :class:`KubernetesClusterSchedulerBackend` with its ``create``.

Everything else receives its collaborators through its constructor, which is what lets each part be
tested alone with a fake API, a manual clock and a deterministic scheduler. The dependency goes one way:
this module imports :mod:`k8s_backend.backend`, never the other way round. The failure sink is built
first and handed to every part that can fail the application, so no part needs the backend.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from k8s_backend.allocation.allocator import ExecutorPodsAllocator
from k8s_backend.allocation.settings import AllocatorListeners, AllocatorSettings
from k8s_backend.application import Application, check_identity, plan_application
from k8s_backend.backend import (
    ApplicationFailedListener,
    BackendParts,
    StartPlan,
    WatchSource,
)
from k8s_backend.backend import KubernetesClusterSchedulerBackend as _BackendHooks
from k8s_backend.conf.model import KubernetesConf, ScalingConf
from k8s_backend.driver import DriverEndpoint, ExecutorLoss, registered_executor_count
from k8s_backend.executor_ops import ExecutorOperations
from k8s_backend.executors.monitor import ExecutorMonitor
from k8s_backend.executors.tracker import ExecutorTracker
from k8s_backend.failures import FailureSink
from k8s_backend.gang.setup import plan_gang
from k8s_backend.gang.start import GangStart
from k8s_backend.heartbeat import DriverHeartbeat, HeartbeatAnnotationStep, default_holder
from k8s_backend.kube.leases import heartbeat_lease_for
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.lifecycle.decisions import LifecycleDecider
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.recovery import recover
from k8s_backend.scheduling import Clock, Scheduler, SystemClock, ThreadScheduler
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.stop_order import Sources, build_stop_sequence

log = logging.getLogger(__name__)

SCHEDULER_THREADS = 3  # two snapshot subscribers plus maintenance work, as Spark's pools

_B = TypeVar("_B", bound="KubernetesClusterSchedulerBackend")


def to_kubernetes_conf(conf: KubernetesConf | Mapping[str, str] | Any) -> KubernetesConf:
    return conf if isinstance(conf, KubernetesConf) else KubernetesConf.from_spark_conf(conf)


@attrs.frozen
class Runtime:
    """What the parts run on: the API, time, threads, and the driver they report to."""

    api: KubernetesApi
    clock: Clock
    scheduler: Scheduler
    driver: DriverEndpoint | None
    owns_api: bool  # built here, so closed at stop
    owns_scheduler: bool  # built here, so shut down at stop


@attrs.frozen
class Assembly:
    """Everything the composition root built, before a backend is made of it."""

    app_id: str
    scaling: ScalingConf
    parts: BackendParts
    plan: StartPlan
    failures: FailureSink
    clock: Clock
    gang: GangStart | None
    failure_listeners: tuple[ApplicationFailedListener, ...]


def assemble(
    conf: KubernetesConf | Mapping[str, str] | Any,
    *,
    app_id: str,
    driver_url: str,
    api: KubernetesApi | None = None,
    driver: DriverEndpoint | None = None,
    clock: Clock | None = None,
    scheduler: Scheduler | None = None,
    on_application_failed: ApplicationFailedListener | None = None,
) -> Assembly:
    """Build every part (see :meth:`KubernetesClusterSchedulerBackend.create` for the arguments).

    Every check that can fail runs before anything is created on the cluster or any thread starts.
    """
    kconf = to_kubernetes_conf(conf)
    check_identity(app_id, driver_url)
    gang = plan_gang(kconf)
    lease = _heartbeat_lease(kconf, app_id)
    heartbeat_steps = () if lease is None else (HeartbeatAnnotationStep(lease),)
    # Loads and checks templates and user steps; the heartbeat's annotation comes last, over them.
    builder = ExecutorPodBuilder(kconf, steps=(*gang.steps, *heartbeat_steps))
    clock = clock or SystemClock()
    owns_api = api is None
    api = api or _real_api(kconf)
    application = plan_application(kconf, app_id, driver_url, api, gang, builder)
    owns_scheduler = scheduler is None  # threads start only once every check passed
    scheduler = scheduler or ThreadScheduler("k8s-backend", threads=SCHEDULER_THREADS, clock=clock)
    runtime = Runtime(api, clock, scheduler, driver, owns_api, owns_scheduler)
    failures = FailureSink()
    heartbeat = _heartbeat(application, runtime)
    parts = _parts(application, runtime, failures, heartbeat)
    listeners = [on_application_failed] if on_application_failed is not None else []
    if driver is not None:
        listeners.append(driver.application_failed)
    return Assembly(
        app_id=app_id,
        scaling=kconf.scaling,
        parts=parts,
        plan=_start_plan(application, runtime, parts, heartbeat),
        failures=failures,
        clock=clock,
        gang=_gang_start(application, runtime, parts, failures),
        failure_listeners=tuple(listeners),
    )


class KubernetesClusterSchedulerBackend(_BackendHooks):
    """Manages an application's executor pods; the Python counterpart of Spark's backend of that name.

    The hooks are :class:`k8s_backend.backend.KubernetesClusterSchedulerBackend`'s; this class adds the
    factory that builds the parts.
    """

    @classmethod
    def create(
        cls: type[_B],
        conf: KubernetesConf | Mapping[str, str] | Any,
        *,
        app_id: str,
        driver_url: str,
        api: KubernetesApi | None = None,
        driver: DriverEndpoint | None = None,
        clock: Clock | None = None,
        scheduler: Scheduler | None = None,
        on_application_failed: ApplicationFailedListener | None = None,
    ) -> _B:
        """Build a backend and everything it owns.

        ``conf``: Spark properties (a mapping or a ``pyspark.SparkConf``) or a :class:`KubernetesConf`.
        ``api=None`` uses the official client (kubeconfig or in-cluster). ``driver=None`` runs without a
        driver: executors are tracked from their pods alone. ``on_application_failed`` is told (once)
        why the application was failed. ``clock`` and ``scheduler`` are for tests.
        Raises :class:`k8s_backend.ConfigError` before anything is created on the cluster.
        """
        assembly = assemble(
            conf,
            app_id=app_id,
            driver_url=driver_url,
            api=api,
            driver=driver,
            clock=clock,
            scheduler=scheduler,
            on_application_failed=on_application_failed,
        )
        return cls.from_assembly(assembly)

    @classmethod
    def from_assembly(cls: type[_B], assembly: Assembly) -> _B:
        """A backend over parts :func:`assemble` built (a tool or test may swap one with attrs.evolve)."""
        return cls(
            app_id=assembly.app_id,
            scaling=assembly.scaling,
            parts=assembly.parts,
            plan=assembly.plan,
            failures=assembly.failures,
            clock=assembly.clock,
            gang=assembly.gang,
            failure_listeners=assembly.failure_listeners,
        )


def _real_api(conf: KubernetesConf) -> KubernetesApi:
    # Imported here only so that tests on the fake never load the official client.
    from k8s_backend.kube.client import OfficialKubernetesApi

    return OfficialKubernetesApi.from_conf(conf.api, namespace_default=conf.namespace)


# -- the parts -----------------------------------------------------------------------------------------


def _heartbeat_lease(conf: KubernetesConf, app_id: str) -> str | None:
    """A client-mode driver's heartbeat Lease (none for a driver pod: Kubernetes collects its objects)."""
    driver = conf.driver
    return heartbeat_lease_for(app_id, driver_pod_name=driver.pod_name, enabled=driver.heartbeat_enabled)


def _heartbeat(app: Application, runtime: Runtime) -> DriverHeartbeat | None:
    conf = app.conf
    driver = conf.driver
    name = _heartbeat_lease(conf, app.app_id)
    if name is None:
        return None
    return DriverHeartbeat(
        runtime.api,
        runtime.scheduler,
        runtime.clock,
        namespace=conf.namespace,
        app_id=app.app_id,
        lease_name=name,
        duration=driver.heartbeat_lease_duration,
        holder=default_holder(),
    )


def _parts(
    app: Application, runtime: Runtime, failures: FailureSink, heartbeat: DriverHeartbeat | None
) -> BackendParts:
    store = ExecutorPodsSnapshotsStore(runtime.scheduler, runtime.clock, app.rules)
    watch_source, polling_source = _sources(app.conf, runtime, store)
    monitor = _monitor(app.conf, runtime, store, failures)
    lifecycle = _lifecycle(app.conf, runtime, store, monitor)
    allocator = _allocator(app, runtime, store, lifecycle, monitor, failures)
    operations = ExecutorOperations(
        runtime.api,
        runtime.scheduler,
        runtime.clock,
        namespace=app.conf.namespace,
        app_id=app.app_id,
        lifecycle=app.conf.lifecycle,
        driver=runtime.driver,
    )
    stop_sequence = build_stop_sequence(
        app.conf,
        app_id=app.app_id,
        api=runtime.api,
        sources=Sources(store, watch_source, polling_source),
        allocator=allocator,
        # Executors get time to exit only if a driver told them to stop.
        operations=operations if runtime.driver is not None else None,
        scheduler=runtime.scheduler if runtime.owns_scheduler else None,
        owns_api=runtime.owns_api,
        has_config_map=app.plan.config_map is not None,
        has_pod_group=app.gang.volcano is not None,
        has_auth_secret=app.plan.auth_secret is not None,
        delete_heartbeat=None if heartbeat is None else heartbeat.delete,
    )
    return BackendParts(
        store=store,
        watch_source=watch_source,
        polling_source=polling_source,
        allocator=allocator,
        lifecycle=lifecycle,
        operations=operations,
        monitor=monitor,
        stop_sequence=stop_sequence,
        registered_executors=functools.partial(registered_executor_count, runtime.driver, store),
    )


def _sources(
    conf: KubernetesConf, runtime: Runtime, store: ExecutorPodsSnapshotsStore
) -> tuple[WatchSource, ExecutorPodsPollingSnapshotSource]:
    snapshots = conf.snapshots
    watch_source = ExecutorPodsWatchSnapshotSource(
        runtime.api, store, runtime.clock, namespace=conf.namespace, enabled=snapshots.enable_api_watcher
    )
    polling_source = ExecutorPodsPollingSnapshotSource(
        runtime.api,
        store,
        runtime.scheduler,
        namespace=conf.namespace,
        interval=snapshots.api_polling_interval,
        enabled=snapshots.enable_api_polling,
        cached_reads=snapshots.enable_polling_with_resource_version,
    )
    return watch_source, polling_source


def _monitor(
    conf: KubernetesConf, runtime: Runtime, store: ExecutorPodsSnapshotsStore, failures: FailureSink
) -> ExecutorMonitor:
    tracker = ExecutorTracker(
        container_name=conf.executor.container_name,
        stuck_timeout=conf.lifecycle.stuck_timeout,
        image_pull_timeout=conf.lifecycle.image_pull_fail_timeout or None,
    )
    return ExecutorMonitor(
        tracker,
        store,
        runtime.clock,
        interval=conf.snapshots.event_processing_interval,
        on_application_failed=failures.report,
    )


def _lifecycle(
    conf: KubernetesConf, runtime: Runtime, store: ExecutorPodsSnapshotsStore, monitor: ExecutorMonitor
) -> ExecutorPodsLifecycleManager:
    def executor_removed(executor_id: int, loss: ExecutorLoss) -> None:
        monitor.removed(executor_id, loss.message.strip().splitlines()[0] if loss.message.strip() else "")

    return ExecutorPodsLifecycleManager(
        runtime.api,
        store,
        runtime.clock,
        namespace=conf.namespace,
        decider=LifecycleDecider(
            container_name=conf.executor.container_name,
            delete_on_termination=conf.lifecycle.delete_on_termination,
            missing_pod_detect_delta=conf.snapshots.missing_pod_detect_delta,
            removed_cache_timeout=conf.lifecycle.deleted_executors_cache_timeout,
        ),
        interval=conf.snapshots.event_processing_interval,
        driver=runtime.driver,
        on_executor_removed=executor_removed,
    )


def _allocator(
    app: Application,
    runtime: Runtime,
    store: ExecutorPodsSnapshotsStore,
    lifecycle: ExecutorPodsLifecycleManager,
    monitor: ExecutorMonitor,
    failures: FailureSink,
) -> ExecutorPodsAllocator:
    return ExecutorPodsAllocator(
        AllocatorSettings.from_conf(app.conf),
        app.identity,
        runtime.api,
        app.builder,
        store,
        runtime.clock,
        listeners=AllocatorListeners(
            known_executor_ids=lambda: lifecycle.registered_executors().keys(),
            on_executor_requested=monitor.requested,
            on_creation_failed=monitor.creation_failed,
        ),
        failures=failures,
    )


# -- starting ------------------------------------------------------------------------------------------


def _start_plan(
    app: Application, runtime: Runtime, parts: BackendParts, heartbeat: DriverHeartbeat | None
) -> StartPlan:
    conf = app.conf

    def run_recovery() -> int:
        _, report = recover(
            runtime.api,
            parts.store,
            namespace=conf.namespace,
            app_id=app.app_id,
            policy=conf.lifecycle.recovery_policy,
            driver_url=app.driver_url,
            image=conf.executor.image,
            rules=app.rules,
            delete_finished=conf.lifecycle.delete_on_termination,
        )
        parts.operations.delete_pods_eventually(report.failed_deletes)
        return report.next_executor_id

    wait_for_driver: Callable[[], object] | None = None
    driver_pod_name = conf.driver.pod_name
    if driver_pod_name:
        timeout = conf.allocation.driver_readiness_timeout
        wait_for_driver = functools.partial(parts.operations.wait_for_driver_ready, driver_pod_name, timeout)
    return attrs.evolve(
        app.plan,
        heartbeat=None if heartbeat is None else heartbeat.start,
        recover=run_recovery,
        wait_for_driver=wait_for_driver,
    )


def _gang_start(
    app: Application, runtime: Runtime, parts: BackendParts, failures: FailureSink
) -> GangStart | None:
    gate = app.gang.gate
    if gate is None:
        return None
    monitor = parts.monitor
    return GangStart(
        gate,
        runtime.scheduler,
        runtime.clock,
        running=parts.registered_executors,
        stuck_reasons=lambda: monitor.stuck_reasons(min_wait=0),
        failures=failures,
    )
