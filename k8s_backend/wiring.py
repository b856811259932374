"""The composition root: the one place that builds and wires the backend's parts.

Everything else receives its collaborators through its constructor, which is what lets each part be
tested alone with a fake API, a manual clock and a deterministic scheduler.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from k8s_backend.allocation.allocator import ExecutorPodsAllocator, fetch_driver_pod
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.driver import DriverEndpoint, ExecutorLoss
from k8s_backend.errors import ConfigError
from k8s_backend.executor_ops import ExecutorOperations
from k8s_backend.executors.monitor import ExecutorMonitor
from k8s_backend.executors.tracker import ExecutorTracker
from k8s_backend.gang.setup import GangSetup, plan_gang
from k8s_backend.kube.labels import app_selector, executor_selector
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    POD_GROUPS,
    PODS,
    PVCS,
    SERVICES,
    ApiError,
    KubernetesApi,
    Obj,
    is_retryable,
)
from k8s_backend.lifecycle.decisions import LifecycleDecider
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.config_map import build_executor_config_map, executor_config_map_name
from k8s_backend.pods.names import resource_name_prefix
from k8s_backend.recovery import recover
from k8s_backend.scheduling import Clock, Scheduler, SystemClock, ThreadScheduler
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.states import PodStateRules
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.watch_source import ExecutorPodsWatchSnapshotSource
from k8s_backend.stop_sequence import Step, StopSequence

if TYPE_CHECKING:
    from k8s_backend.backend import ApplicationFailedListener, KubernetesClusterSchedulerBackend

log = logging.getLogger(__name__)

SCHEDULER_THREADS = 3  # two snapshot subscribers plus maintenance work, as Spark's pools
DELETE_STEPS = (
    "delete the driver services",
    "delete the application's PVCs",
    "delete the executor pods",
    "delete the executor config maps",
    "delete the PodGroup",
)


def to_kubernetes_conf(conf: KubernetesConf | Mapping[str, str] | Any) -> KubernetesConf:
    return conf if isinstance(conf, KubernetesConf) else KubernetesConf.from_spark_conf(conf)


def _real_api(conf: KubernetesConf) -> KubernetesApi:
    from k8s_backend.kube.client import OfficialKubernetesApi

    return OfficialKubernetesApi.from_conf(conf.api, namespace_default=conf.namespace)


class _Late:
    """The backend, for callbacks wired before it exists (the allocator reports failure, for one)."""

    def __init__(self) -> None:
        self.backend: KubernetesClusterSchedulerBackend | None = None

    def application_failed(self, reason: str) -> None:
        if self.backend is not None:
            self.backend.application_failed(reason)


def build_backend(
    cls: type[KubernetesClusterSchedulerBackend],
    conf: KubernetesConf | Mapping[str, str] | Any,
    *,
    app_id: str,
    driver_url: str,
    api: KubernetesApi | None,
    driver: DriverEndpoint | None,
    clock: Clock | None,
    scheduler: Scheduler | None,
    on_application_failed: ApplicationFailedListener | None,
    watch_on_scheduler: bool = False,
) -> KubernetesClusterSchedulerBackend:
    """Build the backend: every check that can fail runs before anything is created on the cluster."""
    kconf = to_kubernetes_conf(conf)
    if not app_id:
        raise ConfigError("app_id must be a non-empty application id (spark.app.id)", key="spark.app.id")
    if not driver_url:
        raise ConfigError("driver_url must be the driver's spark:// RPC address", key="spark.driver.host")
    gang = plan_gang(kconf)
    builder = ExecutorPodBuilder(kconf, steps=gang.steps)  # loads and checks templates and user steps
    namespace = kconf.namespace
    clock = clock or SystemClock()
    owns_api = api is None
    api = api or _real_api(kconf)
    driver_pod = fetch_driver_pod(api, namespace, kconf.driver.pod_name)
    owns_scheduler = scheduler is None
    scheduler = scheduler or ThreadScheduler("k8s-backend", threads=SCHEDULER_THREADS, clock=clock)
    prefix = kconf.executor.pod_name_prefix or resource_name_prefix(kconf.app_name)
    late = _Late()

    config_map: Obj | None = None
    if not kconf.executor.disable_config_map:
        config_map = build_executor_config_map(
            kconf,
            app_id=app_id,
            name=executor_config_map_name(secrets.token_hex(5)),
            driver_pod=driver_pod,
            conf_dir=builder.facts.conf_dir,
        )
    pod_group = gang.pod_group(builder, app_id=app_id, driver_url=driver_url, driver_pod=driver_pod)

    rules = PodStateRules(kconf.executor.container_name, kconf.snapshots.check_all_containers)
    store = ExecutorPodsSnapshotsStore(scheduler, clock, rules)
    watch_source = ExecutorPodsWatchSnapshotSource(
        api,
        store,
        namespace=namespace,
        enabled=kconf.snapshots.enable_api_watcher,
        scheduler=scheduler if watch_on_scheduler else None,
    )
    polling_source = ExecutorPodsPollingSnapshotSource(
        api,
        store,
        scheduler,
        namespace=namespace,
        interval=kconf.snapshots.api_polling_interval,
        enabled=kconf.snapshots.enable_api_polling,
        cached_reads=kconf.snapshots.enable_polling_with_resource_version,
    )
    tracker = ExecutorTracker(
        container_name=kconf.executor.container_name,
        stuck_timeout=kconf.lifecycle.stuck_timeout,
        image_pull_timeout=kconf.lifecycle.image_pull_fail_timeout or None,
    )
    monitor = ExecutorMonitor(
        tracker,
        store,
        clock,
        interval=kconf.snapshots.event_processing_interval,
        on_application_failed=late.application_failed,
    )

    def executor_removed(executor_id: int, loss: ExecutorLoss) -> None:
        monitor.removed(executor_id, loss.message.strip().splitlines()[0] if loss.message.strip() else "")

    lifecycle = ExecutorPodsLifecycleManager(
        api,
        store,
        clock,
        namespace=namespace,
        decider=LifecycleDecider(
            container_name=kconf.executor.container_name,
            delete_on_termination=kconf.lifecycle.delete_on_termination,
            missing_pod_detect_delta=kconf.snapshots.missing_pod_detect_delta,
            removed_cache_timeout=kconf.lifecycle.deleted_executors_cache_timeout,
        ),
        interval=kconf.snapshots.event_processing_interval,
        driver=driver,
        on_executor_removed=executor_removed,
    )
    allocator = ExecutorPodsAllocator(
        kconf,
        api,
        builder,
        store,
        clock,
        app_id=app_id,
        driver_url=driver_url,
        pod_name_prefix=prefix,
        driver_pod=driver_pod,
        config_map_name=None if config_map is None else config_map["metadata"]["name"],
        known_executor_ids=lambda: lifecycle.registered_executors().keys(),
        on_application_failed=late.application_failed,
        on_executor_requested=monitor.requested,
        on_creation_failed=monitor.creation_failed,
    )
    operations = ExecutorOperations(
        api,
        scheduler,
        namespace=namespace,
        app_id=app_id,
        delete_grace_period=kconf.lifecycle.delete_grace_period,
        decommission_label=kconf.lifecycle.decommission_label,
        decommission_label_value=kconf.lifecycle.decommission_label_value,
        driver=driver,
    )

    def run_recovery() -> int:
        _, report = recover(
            api,
            store,
            namespace=namespace,
            app_id=app_id,
            policy=kconf.lifecycle.recovery_policy,
            driver_url=driver_url,
            image=kconf.executor.image,
            rules=rules,
            delete_finished=kconf.lifecycle.delete_on_termination,
        )
        operations.delete_pods_eventually(report.failed_deletes)
        return report.next_executor_id

    steps = _stop_steps(
        kconf,
        operations if driver is not None else None,
        api,
        app_id,
        gang,
        store,
        watch_source,
        polling_source,
        allocator,
        scheduler,
        owns_scheduler=owns_scheduler,
        owns_api=owns_api,
        has_config_map=config_map is not None,
    )
    if owns_api:
        # Deletes still being retried in the background need the client: the last one closes it.
        steps.append(("close the API client", lambda: None if stop_sequence.retrying else api.close()))
    stop_sequence = StopSequence(
        steps,
        background=DELETE_STEPS,
        retryable=lambda error: not isinstance(error, ApiError) or is_retryable(error),
        on_retries_done=api.close if owns_api else None,
    )
    backend = cls(
        kconf,
        app_id=app_id,
        api=api,
        scheduler=scheduler,
        clock=clock,
        store=store,
        watch_source=watch_source,
        polling_source=polling_source,
        allocator=allocator,
        lifecycle=lifecycle,
        operations=operations,
        stop_sequence=stop_sequence,
        monitor=monitor,
        driver=driver,
        config_map=config_map,
        pod_group=pod_group,
        recover=run_recovery,
        gate=gang.gate,
        on_application_failed=on_application_failed,
    )
    late.backend = backend
    return backend


def _stop_steps(
    conf: KubernetesConf,
    operations: ExecutorOperations | None,
    api: KubernetesApi,
    app_id: str,
    gang: GangSetup,
    store: ExecutorPodsSnapshotsStore,
    watch_source: ExecutorPodsWatchSnapshotSource,
    polling_source: ExecutorPodsPollingSnapshotSource,
    allocator: ExecutorPodsAllocator,
    scheduler: Scheduler,
    *,
    owns_scheduler: bool,
    owns_api: bool,
    has_config_map: bool,
) -> list[Step]:
    """Spark's stop order, with the threads stopped before deletes so no round creates pods after them."""
    namespace = conf.namespace
    app = app_selector(app_id)
    executors = executor_selector(app_id)

    def delete(resource: Any, selector: str) -> Callable[[], None]:
        return lambda: api.delete_collection(resource, namespace, label_selector=selector)

    steps: list[Step] = [
        ("stop the snapshot store", store.stop),
        ("stop the executor watch", watch_source.stop),
        ("stop the executor polling", polling_source.stop),
        ("stop the allocator", allocator.halt),
    ]
    if owns_scheduler:
        grace = conf.snapshots.subscribers_shutdown_grace_period
        steps.append(("stop the backend threads", lambda: scheduler.shutdown(grace)))
    if conf.driver.delete_service_on_termination:
        steps.append(("delete the driver services", delete(SERVICES, app)))
    if conf.driver.own_pvc:
        steps.append(("delete the application's PVCs", delete(PVCS, app)))
    if conf.lifecycle.delete_on_termination:
        exit_wait = conf.lifecycle.stop_exit_wait
        if operations is not None and exit_wait > 0:
            ops = operations

            def let_executors_exit() -> None:
                ops.wait_for_executors_to_exit(exit_wait)

            steps.append(("let the executors exit", let_executors_exit))
        steps.append(("delete the executor pods", delete(PODS, executors)))
        if has_config_map:
            steps.append(("delete the executor config maps", delete(CONFIG_MAPS, executors)))
    if gang.volcano is not None:
        steps.append(("delete the PodGroup", delete(POD_GROUPS, app)))
    return steps
