"""What the backend does at start beyond its parts' own start: the builders of its :class:`StartPlan`
(a client-mode driver's heartbeat, recovery, the wait for the driver pod, a cluster-mode driver's
registered executors on its pod) and of the built-in gang start.
Used by the composition root."""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from k8s_backend.assembly.application import Application
from k8s_backend.backend.heartbeat import RENEWALS_PER_DURATION, DriverHeartbeat, default_holder
from k8s_backend.backend.hooks import BackendParts, StartPlan
from k8s_backend.backend.recovery import recover
from k8s_backend.backend.registration_publisher import RegistrationPublisher
from k8s_backend.common import Clock, Scheduler
from k8s_backend.common.failure_sink import FailureSink
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.gang.start import GangStart
from k8s_backend.kube.activity import KEPT as ACTIVITY_KEPT
from k8s_backend.kube.activity import activity_annotation
from k8s_backend.kube.leases import heartbeat_lease_for
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.lifecycle.driver_port import DriverEndpoint
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource


def heartbeat_lease(conf: KubernetesConf, app_id: str) -> str | None:
    """A client-mode driver's heartbeat Lease (none for a driver pod: Kubernetes collects its objects)."""
    driver = conf.driver
    return heartbeat_lease_for(app_id, driver_pod_name=driver.pod_name, enabled=driver.heartbeat_enabled)


def driver_heartbeat(
    app: Application,
    api: KubernetesApi,
    scheduler: Scheduler,
    clock: Clock,
    driver: DriverEndpoint | None = None,
) -> DriverHeartbeat | None:
    conf = app.conf
    name = heartbeat_lease(conf, app.app_id)
    if name is None:
        return None
    return DriverHeartbeat(
        api,
        scheduler,
        clock,
        namespace=conf.namespace,
        app_id=app.app_id,
        lease_name=name,
        duration=conf.driver.heartbeat_lease_duration,
        holder=default_holder(),
        registered=None if driver is None else driver.registered_executors,
        keeps_executors=not conf.lifecycle.delete_on_termination,
    )


def executor_activity(app: Application, parts: BackendParts) -> Callable[[], str]:
    """The executor-activity annotation's value as the driver knows it now (its start, its pod name
    prefix, its last targets and markers; see :mod:`k8s_backend.kube.activity`), for
    ``k8s-backend status --timeline``."""
    prefix = app.identity.pod_name_prefix
    monitor = parts.monitor

    def activity() -> str:
        # One more than kept, so that the annotation can say older ones were left out.
        return activity_annotation(prefix, monitor.started_at, *monitor.recent_activity(ACTIVITY_KEPT + 1))

    return activity


def registration_publisher(
    app: Application,
    api: KubernetesApi,
    clock: Clock,
    driver: DriverEndpoint | None = None,
    activity: Callable[[], str] | None = None,
) -> RegistrationPublisher | None:
    """A cluster-mode driver's writer of its registered executors (and ``activity``) on its pod (a
    client-mode one tells them in its heartbeat Lease). At most one write per heartbeat renewal interval,
    so as fresh as that."""
    conf = app.conf
    if driver is None or not conf.driver.pod_name:
        return None
    return RegistrationPublisher(
        api,
        clock,
        namespace=conf.namespace,
        pod_name=conf.driver.pod_name,
        registered=driver.registered_executors,
        interval=conf.driver.heartbeat_lease_duration / RENEWALS_PER_DURATION,
        activity=activity,
    )


def config_map_follows_lease(conf: KubernetesConf) -> bool:
    """Whether a client-mode driver's executor ConfigMap is owned by its heartbeat Lease, as a driver pod
    owns it in cluster mode: the Lease's delete at stop then collects it (one request fewer). Not when
    executors are kept at stop (``deleteOnTermination=false``): their ConfigMap is kept then too."""
    return conf.lifecycle.delete_on_termination and not conf.driver.pod_name


def pods_follow_lease(conf: KubernetesConf) -> bool:
    """Whether a client-mode driver's executor pods are owned by its heartbeat Lease too (see
    :class:`~k8s_backend.backend.heartbeat.HeartbeatAnnotationStep`): when its ConfigMap is, and the
    backend creates the pods itself. A StatefulSet's or Deployment's pods are its controller's, and the
    Lease then goes last at stop, after the controllers that could make pods needing its ConfigMap."""
    return config_map_follows_lease(conf) and conf.allocation.allocator == "direct"


def start_plan(
    app: Application,
    api: KubernetesApi,
    parts: BackendParts,
    heartbeat: DriverHeartbeat | None,
    publisher: RegistrationPublisher | None = None,
) -> StartPlan:
    conf = app.conf

    def run_recovery() -> int:
        _, report = recover(
            api,
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
        if isinstance(parts.watch_source, ExecutorPodsWatchSnapshotSource):
            parts.watch_source.seed(report.resource_version)  # recovery's list serves the watch too
        return report.next_executor_id

    start_heartbeat: Callable[[], object] | None = None if heartbeat is None else heartbeat.start
    config_map = app.plan.config_map
    if heartbeat is not None and config_map is not None and config_map_follows_lease(app.conf):
        lease_first = heartbeat
        executor_config_map = config_map

        def heartbeat_then_config_map() -> None:
            lease_first.start()
            parts.operations.create_config_map(lease_first.own_config_map(executor_config_map))

        start_heartbeat, config_map = heartbeat_then_config_map, None

    wait_for_driver: Callable[[], object] | None = None
    driver_pod_name = conf.driver.pod_name
    if driver_pod_name:
        timeout = conf.allocation.driver_readiness_timeout
        wait_for_driver = functools.partial(parts.operations.wait_for_driver_ready, driver_pod_name, timeout)
    return attrs.evolve(
        app.plan,
        config_map=config_map,
        heartbeat=start_heartbeat,
        recover=run_recovery,
        wait_for_driver=wait_for_driver,
        progress_interval=conf.progress_interval,
        publish_registrations=None
        if publisher is None
        else functools.partial(publisher.start, tick_interval=conf.snapshots.event_processing_interval),
    )


def gang_start(
    app: Application, scheduler: Scheduler, clock: Clock, parts: BackendParts, failures: FailureSink
) -> GangStart | None:
    gate = app.gang.gate
    if gate is None:
        return None
    monitor = parts.monitor
    return GangStart(
        gate,
        scheduler,
        clock,
        running=parts.registered_executors,
        stuck_reasons=functools.partial(monitor.stuck_reasons, min_wait=0),
        failures=failures,
    )
