"""The composition root: the one place that builds and wires the backend's parts (Spark's
KubernetesClusterManager), and the public :class:`KubernetesClusterSchedulerBackend` with its ``create``.

Everything else receives its collaborators through its constructor, which is what lets each part be
tested alone with a fake API, a manual clock and a deterministic scheduler. The dependency goes one way:
this module imports :mod:`k8s_backend.backend.hooks`, never the other way round. The failure sink is built
first and handed to every part that can fail the application, so no part needs the backend.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from k8s_backend.allocation.adaptive import creates_in_flight
from k8s_backend.allocation.allocator import ExecutorPodsAllocator
from k8s_backend.allocation.creator import PodSpecBuilder
from k8s_backend.allocation.node_avoidance import NodeAvoider, NodeAvoidingPodBuilder
from k8s_backend.allocation.oom_builder import OomAwarePodBuilder
from k8s_backend.allocation.owner_allocator import OwnerPodsAllocator, OwnerSettings
from k8s_backend.allocation.owner_objects import OwnerKind
from k8s_backend.allocation.pods_allocator import PodsAllocator
from k8s_backend.allocation.quota import PodDemand, QuotaGate, demand_from
from k8s_backend.allocation.quota_watch import QuotaWatch
from k8s_backend.allocation.settings import AllocatorListeners, AllocatorSettings
from k8s_backend.assembly.application import Application, check_identity, plan_application
from k8s_backend.assembly.rolling import build_roller, roll_settings
from k8s_backend.assembly.start_plan import (
    driver_heartbeat,
    executor_activity,
    gang_start,
    heartbeat_lease,
    pods_follow_lease,
    registration_publisher,
    start_plan,
)
from k8s_backend.assembly.stop_steps import Sources, build_stop_sequence, timeline_writer
from k8s_backend.backend.heartbeat import DriverHeartbeat, HeartbeatAnnotationStep
from k8s_backend.backend.hooks import (
    ApplicationFailedListener,
    BackendParts,
    SchedulerBackendHooks,
    StartPlan,
    WatchSource,
)
from k8s_backend.backend.state import BackendState
from k8s_backend.common import Clock, Scheduler, SystemClock, ThreadScheduler
from k8s_backend.common.failure_sink import FailureSink
from k8s_backend.conf.model import KubernetesConf, ResourceProfile, ScalingConf
from k8s_backend.gang.setup import plan_gang
from k8s_backend.gang.start import GangStart
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.lifecycle.autoscaler_hints_writer import AutoscalerHintsWriter
from k8s_backend.lifecycle.block_migration import BlockMigration
from k8s_backend.lifecycle.decisions import LifecycleDecider
from k8s_backend.lifecycle.disruption_watcher import DisruptionWatcher, NodeReader
from k8s_backend.lifecycle.disruptions import DisruptionDecider, parse_taints
from k8s_backend.lifecycle.driver_port import (
    DriverEndpoint,
    ExecutorActivitySource,
    registered_executor_count,
)
from k8s_backend.lifecycle.executor_events import ExecutorEvents, ExecutorEventsFanout
from k8s_backend.lifecycle.executor_ops import ExecutorOperations
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.lifecycle.oom import OomBooster, OomSettings
from k8s_backend.lifecycle.roll_policy import PolicyHook
from k8s_backend.lifecycle.roller import ExecutorRoller, RollSettings
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.resources import executor_resources, memory_overhead_mib
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.tracking.monitor import ExecutorMonitor
from k8s_backend.tracking.tracker import ExecutorTracker

if TYPE_CHECKING:  # prometheus_client is loaded only when metrics are on
    from k8s_backend.metrics import BackendMonitoring

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
    monitoring: BackendMonitoring | None = None  # spark.kubernetes.metrics.port is set
    roll: RollSettings | None = None  # executor rolling is on


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
    monitoring: BackendMonitoring | None = None


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
    roll_policy: PolicyHook | None = None,
) -> Assembly:
    """Build every part (see :meth:`KubernetesClusterSchedulerBackend.create` for the arguments).

    Every check that can fail runs before anything is created on the cluster or any thread starts.
    """
    kconf = to_kubernetes_conf(conf)
    check_identity(app_id, driver_url)
    roll = roll_settings(kconf.roll, roll_policy, has_driver=driver is not None)
    gang = plan_gang(kconf)
    lease = heartbeat_lease(kconf, app_id)
    heartbeat_step = None if lease is None else HeartbeatAnnotationStep(lease)
    heartbeat_steps = () if heartbeat_step is None else (heartbeat_step,)
    # Loads and checks templates and user steps; the heartbeat's annotation comes last, over them.
    builder = ExecutorPodBuilder(kconf, steps=(*gang.steps, *heartbeat_steps))
    clock = clock or SystemClock()
    owns_api = api is None
    api = api or _real_api(kconf)
    monitoring = _monitoring(kconf, app_id)
    if monitoring is not None:  # every part, and every adapter, goes through the counted API
        api = monitoring.instrument(api)
    application = plan_application(kconf, app_id, driver_url, api, gang, builder)
    owns_scheduler = scheduler is None  # threads start only once every check passed
    scheduler = scheduler or ThreadScheduler("k8s-backend", threads=SCHEDULER_THREADS, clock=clock)
    runtime = Runtime(api, clock, scheduler, driver, owns_api, owns_scheduler, monitoring, roll)
    failures = FailureSink()
    heartbeat = driver_heartbeat(application, api, scheduler, clock, driver)
    parts = _parts(application, runtime, failures, heartbeat)
    activity = executor_activity(application, parts)
    if heartbeat is not None:  # client mode: the renewals tell it; cluster mode: the publisher's patches
        heartbeat.activity = activity
        if heartbeat_step is not None and pods_follow_lease(kconf):
            heartbeat_step.owner = heartbeat
    publisher = registration_publisher(application, api, clock, driver, activity)
    listeners = [on_application_failed] if on_application_failed is not None else []
    if driver is not None:
        listeners.append(driver.application_failed)
    return Assembly(
        app_id=app_id,
        scaling=kconf.scaling,
        parts=parts,
        plan=start_plan(application, api, parts, heartbeat, publisher),
        failures=failures,
        clock=clock,
        gang=gang_start(application, scheduler, clock, parts, failures),
        failure_listeners=tuple(listeners),
        monitoring=monitoring,
    )


class KubernetesClusterSchedulerBackend(SchedulerBackendHooks):
    """Manages an application's executor pods; the Python counterpart of Spark's backend of that name.

    The hooks are :class:`k8s_backend.backend.hooks.KubernetesClusterSchedulerBackend`'s; this class adds the
    factory that builds the parts, and the metrics server's start (see ``spark.kubernetes.metrics.port``).
    """

    def __init__(self, *, monitoring: BackendMonitoring | None = None, **hooks: Any) -> None:
        super().__init__(**hooks)
        self.monitoring = monitoring

    def start(self) -> None:
        """Start the metrics server (a port in use is a ConfigError naming the key), then the backend."""
        if self.monitoring is not None and self.state is BackendState.NEW:
            self.monitoring.server.start()
        super().start()

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
        roll_policy: PolicyHook | None = None,
    ) -> _B:
        """Build a backend and everything it owns.

        ``conf``: Spark properties (a mapping or a ``pyspark.SparkConf``) or a :class:`KubernetesConf`.
        ``api=None`` uses the official client (kubeconfig or in-cluster). ``driver=None`` runs without a
        driver: executors are tracked from their pods alone. ``on_application_failed`` is told (once)
        why the application was failed. ``roll_policy``: a Python roll policy for executor rolling (given
        the candidate executors' summaries, it returns the id to roll or None), instead of
        ``spark.kubernetes.executor.rollPolicy``; rolling must be on. ``clock`` and ``scheduler`` are for
        tests.
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
            roll_policy=roll_policy,
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
            monitoring=assembly.monitoring,
        )


# Requests beside the creates that can be in flight at once: the pod and quota watches, node lists, the
# heartbeat's renewal, the polling source's list, a delete of the lifecycle manager, the metrics' reads.
OTHER_CONNECTIONS = 8


def _real_api(conf: KubernetesConf) -> KubernetesApi:
    # Imported here only so that tests on the fake never load the official client.
    from k8s_backend.kube.client import OfficialKubernetesApi

    return OfficialKubernetesApi.from_conf(
        conf.api,
        namespace_default=conf.namespace,
        connections=creates_in_flight(conf.allocation.concurrency) + OTHER_CONNECTIONS,
    )


def _monitoring(conf: KubernetesConf, app_id: str) -> BackendMonitoring | None:
    if conf.metrics_port == 0:
        return None
    from k8s_backend.metrics import BackendMonitoring

    return BackendMonitoring.from_conf(conf, app_id)


# -- the parts -----------------------------------------------------------------------------------------


def _parts(
    app: Application, runtime: Runtime, failures: FailureSink, heartbeat: DriverHeartbeat | None
) -> BackendParts:
    store = ExecutorPodsSnapshotsStore(runtime.scheduler, runtime.clock, app.rules)
    watch_source, polling_source = _sources(app.conf, runtime, store)
    monitor = _monitor(app.conf, runtime, store, failures)
    monitoring = runtime.monitoring
    # Every executor change reaches the monitor (histories, status, timeline) and the metrics by this route.
    events = ExecutorEventsFanout([monitor] if monitoring is None else [monitor, monitoring.failures])
    booster = _oom_booster(app)
    lifecycle = _lifecycle(app.conf, runtime, store, events, booster)
    operations = ExecutorOperations(
        runtime.api,
        runtime.scheduler,
        runtime.clock,
        namespace=app.conf.namespace,
        app_id=app.app_id,
        lifecycle=app.conf.lifecycle,
        driver=runtime.driver,
    )
    disruptions = _disruptions(app.conf, runtime, store, events, operations)
    allocator = _allocator(app, runtime, store, lifecycle, events, failures, disruptions, booster)
    roller = _roller(runtime, allocator, disruptions, events, operations)
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
        config_map_collected=None if heartbeat is None else heartbeat.collects_config_map,
        stop_metrics=None if monitoring is None else monitoring.server.stop,
        stop_roller=None if roller is None else roller.stop,
        write_timeline=_timeline_writer(app, monitor),
    )
    parts = BackendParts(
        store=store,
        watch_source=watch_source,
        polling_source=polling_source,
        allocator=allocator,
        lifecycle=lifecycle,
        operations=operations,
        monitor=monitor,
        events=events,
        stop_sequence=stop_sequence,
        registered_executors=functools.partial(registered_executor_count, runtime.driver, store),
        disruptions=disruptions,
        autoscaler_hints=_autoscaler_hints(app.conf, runtime, store),
        roller=roller,
    )
    if monitoring is not None:
        monitoring.attach(parts, has_driver=runtime.driver is not None)
    return parts


def _timeline_writer(app: Application, monitor: ExecutorMonitor) -> Callable[[], None] | None:
    """Writes the executor timeline at stop (``spark.kubernetes.report.timeline``), if asked for."""
    path = app.conf.report_timeline
    if path is None:
        return None
    return timeline_writer(path, monitor, f"{app.conf.app_name} ({app.app_id}): executor timeline")


def _sources(
    conf: KubernetesConf, runtime: Runtime, store: ExecutorPodsSnapshotsStore
) -> tuple[WatchSource, ExecutorPodsPollingSnapshotSource]:
    snapshots = conf.snapshots
    watch_source = ExecutorPodsWatchSnapshotSource(
        runtime.api,
        store,
        runtime.clock,
        namespace=conf.namespace,
        enabled=snapshots.enable_api_watcher,
        streaming_list=snapshots.streaming_list,
    )
    polling_source = ExecutorPodsPollingSnapshotSource(
        runtime.api,
        store,
        runtime.scheduler,
        namespace=conf.namespace,
        interval=snapshots.api_polling_interval,
        enabled=snapshots.enable_api_polling,
        cached_reads=snapshots.enable_polling_with_resource_version,
        streaming_list=snapshots.streaming_list,
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
    driver = runtime.driver
    return ExecutorMonitor(
        tracker,
        store,
        runtime.clock,
        interval=conf.snapshots.event_processing_interval,
        on_application_failed=failures.report,
        registered_ids=None if driver is None else driver.registered_executors,
        block_migration=BlockMigration.from_properties(conf.spark_properties),
    )


def _oom_booster(app: Application) -> OomBooster | None:
    conf = app.conf
    settings = OomSettings(conf.lifecycle.oom_overhead_factor, conf.lifecycle.oom_max_overhead_factor)
    if not settings.enabled:
        return None
    default_overhead = memory_overhead_mib(conf.executor.default_profile, conf.executor)
    # Until the allocator exists (see _allocator), every profile's base is the default profile's.
    return OomBooster(
        settings, container_name=conf.executor.container_name, base_overhead=lambda _: default_overhead
    )


def _lifecycle(
    conf: KubernetesConf,
    runtime: Runtime,
    store: ExecutorPodsSnapshotsStore,
    events: ExecutorEvents,
    oom: OomBooster | None = None,
) -> ExecutorPodsLifecycleManager:
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
        events=events,
        oom=oom,
    )


def _disruptions(
    conf: KubernetesConf,
    runtime: Runtime,
    store: ExecutorPodsSnapshotsStore,
    events: ExecutorEvents,
    operations: ExecutorOperations,
) -> DisruptionWatcher | None:
    lifecycle = conf.lifecycle
    if not lifecycle.disruption_decommission:
        return None
    decider = DisruptionDecider(taints=parse_taints(lifecycle.disruption_taints))
    nodes = (
        NodeReader(runtime.api, runtime.clock, interval=lifecycle.disruption_node_interval)
        if decider.reads_nodes
        else None
    )
    return DisruptionWatcher(
        store,
        runtime.clock,
        decider=decider,
        nodes=nodes,
        interval=conf.snapshots.event_processing_interval,
        driver=runtime.driver,
        events=events,
        label=operations.label_decommissioning,
    )


def _autoscaler_hints(
    conf: KubernetesConf, runtime: Runtime, store: ExecutorPodsSnapshotsStore
) -> AutoscalerHintsWriter | None:
    lifecycle = conf.lifecycle
    if not lifecycle.autoscaler_hints:
        return None
    if not isinstance(runtime.driver, ExecutorActivitySource):
        # The facts come only from a driver: without one (the backend used alone) there is nothing to go on.
        log.warning(
            "spark.kubernetes.executor.autoscalerHints.enabled is true, but no driver reports what its "
            "executors hold (only the PySpark bridge does): no autoscaler hints are written"
        )
        return None
    return AutoscalerHintsWriter(
        runtime.api,
        store,
        runtime.driver,
        namespace=conf.namespace,
        interval=lifecycle.autoscaler_hints_interval,
        # The Deployment allocator picks the pods to scale down by their pod-deletion-cost: it owns it.
        deletion_cost=None if conf.allocation.allocator == "deployment" else lifecycle.autoscaler_hints_cost,
    )


def _roller(
    runtime: Runtime,
    allocator: PodsAllocator,
    disruptions: DisruptionWatcher | None,
    events: ExecutorEvents,
    operations: ExecutorOperations,
) -> ExecutorRoller | None:
    def target() -> int:
        targets: dict[int, int] = allocator.status()["targets"]
        return sum(targets.values())

    return build_roller(
        runtime.roll,
        scheduler=runtime.scheduler,
        clock=runtime.clock,
        driver=runtime.driver,
        target=target,
        departing=None if disruptions is None else disruptions.departing_executor_ids,
        events=events,
        label=operations.label_decommissioning,
    )


def _allocator(
    app: Application,
    runtime: Runtime,
    store: ExecutorPodsSnapshotsStore,
    lifecycle: ExecutorPodsLifecycleManager,
    events: ExecutorEvents,
    failures: FailureSink,
    disruptions: DisruptionWatcher | None,
    booster: OomBooster | None,
) -> PodsAllocator:
    if app.conf.allocation.allocator != "direct":
        return _owner_allocator(app, runtime, failures)
    metrics = runtime.monitoring
    builder: PodSpecBuilder = (
        app.builder if booster is None else OomAwarePodBuilder(app.builder, booster, app.conf.executor)
    )
    avoider = _node_avoider(app, runtime)
    if avoider is not None:
        builder = NodeAvoidingPodBuilder(builder, avoider)
    observers = [o.observe_batch for o in (booster, avoider) if o is not None]
    allocator = ExecutorPodsAllocator(
        AllocatorSettings.from_conf(app.conf),
        app.identity,
        runtime.api,
        builder,
        store if metrics is None else metrics.timed(store),  # each round timed
        runtime.clock,
        listeners=AllocatorListeners(
            known_executor_ids=lifecycle.registered_executor_ids,
            events=events,
            **({} if disruptions is None else {"departing_executor_ids": disruptions.departing_executor_ids}),
            observe_batch=None if not observers else functools.partial(_observe_all, observers),
        ),
        failures=failures,
        scheduler=runtime.scheduler,
        quota=_quota_gate(app, runtime, booster),
        avoider=avoider,
    )
    if booster is not None:  # a custom profile's base overhead is the allocator's profile's
        default = app.conf.executor.default_profile
        booster.base_overhead = lambda rp_id: memory_overhead_mib(
            allocator.profile(rp_id) or default, app.conf.executor
        )
    return allocator


def _owner_allocator(app: Application, runtime: Runtime, failures: FailureSink) -> OwnerPodsAllocator:
    """The statefulset or deployment allocator (the conf refused what only the direct one does)."""
    conf = app.conf
    settings = OwnerSettings(
        OwnerKind(conf.allocation.allocator),
        conf.namespace,
        conf.executor.default_profile,
        interval=conf.allocation.batch_delay,
        deletion_cost=conf.allocation.pod_deletion_cost,
        # A driver answers the executors' GenerateExecID (through generate_executor_id); without
        # one, nothing asks, and the allocator labels the pods itself.
        name_executors=runtime.driver is None,
    )
    return OwnerPodsAllocator(
        settings, app.identity, runtime.api, app.builder, runtime.scheduler, runtime.clock, failures=failures
    )


def _quota_gate(app: Application, runtime: Runtime, booster: OomBooster | None) -> QuotaGate | None:
    conf = app.conf
    if not conf.lifecycle.quota_aware:
        return None

    def demand_of(profile: ResourceProfile) -> PodDemand:
        resources = executor_resources(profile, conf.executor)
        memory = resources.total_mib
        if booster is not None:  # the raise of OOM-aware replacements counts against quotas too
            memory += booster.overhead_mib(profile.id, resources.overhead_mib) - resources.overhead_mib
        return demand_from(memory, resources.cpu_request, resources.cpu_limit)

    return QuotaGate(QuotaWatch(runtime.api, conf.namespace, runtime.clock), demand_of)


def _node_avoider(app: Application, runtime: Runtime) -> NodeAvoider | None:
    lifecycle = app.conf.lifecycle
    if lifecycle.node_failure_threshold <= 0:
        return None
    return NodeAvoider(
        runtime.clock,
        threshold=lifecycle.node_failure_threshold,
        window=lifecycle.node_failure_window,
        container_name=app.conf.executor.container_name,
    )


def _observe_all(observers: Sequence[Callable[[SnapshotBatch], None]], batch: SnapshotBatch) -> None:
    for observe in observers:
        observe(batch)
