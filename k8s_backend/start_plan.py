"""What the backend does at start beyond its parts' own start: the builders of its :class:`StartPlan`
(a client-mode driver's heartbeat, recovery, the wait for the driver pod) and of the built-in gang start.
Used by the composition root."""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs

from k8s_backend.application import Application
from k8s_backend.backend import BackendParts, StartPlan
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.driver import DriverEndpoint
from k8s_backend.failures import FailureSink
from k8s_backend.gang.start import GangStart
from k8s_backend.heartbeat import DriverHeartbeat, default_holder
from k8s_backend.kube.leases import heartbeat_lease_for
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.recovery import recover
from k8s_backend.scheduling import Clock, Scheduler


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
    )


def start_plan(
    app: Application, api: KubernetesApi, parts: BackendParts, heartbeat: DriverHeartbeat | None
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
        progress_interval=conf.progress_interval,
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
        stuck_reasons=lambda: monitor.stuck_reasons(min_wait=0),
        failures=failures,
    )
