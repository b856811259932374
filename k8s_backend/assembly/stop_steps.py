"""What the backend does at stop, in Spark's order: the steps of its :class:`StopSequence`.

Threads stop before anything is deleted, so that no allocation round creates pods after the deletes.
Deletes that still fail are retried in the background (a short API outage at stop must not leak pods).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

from k8s_backend.allocation.pods_allocator import PodsAllocator
from k8s_backend.assembly.start_plan import pods_follow_lease
from k8s_backend.common import Scheduler
from k8s_backend.common.stop_sequence import Step, StopSequence
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import app_selector, executor_selector
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    POD_GROUPS,
    PODS,
    PVCS,
    SECRETS,
    SERVICES,
    ApiError,
    KubernetesApi,
    is_retryable,
)
from k8s_backend.lifecycle.executor_ops import ExecutorOperations
from k8s_backend.report import render_html
from k8s_backend.snapshots.polling_source import ExecutorPodsPollingSnapshotSource
from k8s_backend.snapshots.states import PodPhase
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.tracking.monitor import ExecutorMonitor

log = logging.getLogger(__name__)

VIEW_POLL = 0.05  # seconds between looks at the store's view while executors exit (no request per look)

DELETE_STEPS = (
    "delete the driver services",
    "delete the application's PVCs",
    "delete the executor pods",
    "delete the executor config maps",
    "delete the executor auth secrets",
    "delete the PodGroup",
    "delete the heartbeat lease",
)


class _Watch(Protocol):
    def stop(self, timeout: float = 5.0) -> None: ...

    def health(self) -> dict[str, object]: ...


@attrs.frozen
class Sources:
    """The store and the two sources that feed it, stopped first."""

    store: ExecutorPodsSnapshotsStore
    watch_source: _Watch
    polling_source: ExecutorPodsPollingSnapshotSource


def build_stop_sequence(
    conf: KubernetesConf,
    *,
    app_id: str,
    api: KubernetesApi,
    sources: Sources,
    allocator: PodsAllocator,
    operations: ExecutorOperations | None,
    scheduler: Scheduler | None,
    owns_api: bool,
    has_config_map: bool,
    has_pod_group: bool,
    has_auth_secret: bool = False,
    delete_heartbeat: Callable[[], None] | None = None,
    stop_metrics: Callable[[], None] | None = None,
    write_timeline: Callable[[], None] | None = None,
    config_map_collected: Callable[[], bool] | None = None,
    stop_roller: Callable[[], None] | None = None,
) -> StopSequence:
    """``delete_heartbeat``: stops and deletes a client-mode driver's heartbeat Lease, after the executors
    unless it owns them (see :func:`_lease_step_at`; deleted earlier, it would make executors it does not
    own look orphaned to ``k8s-backend gc`` while they still run).
    ``operations``: given when executors may exit by themselves first (a driver told them to stop);
    ``scheduler``: given when the backend owns it (its threads are stopped); ``owns_api``: the client is
    closed once the last background retry ends. ``stop_metrics``: stops the metrics server, first (its
    port is closed when stop() returns, even if a delete then hangs). ``write_timeline``: writes the
    executor timeline once nothing changes any more, before the deletes (which a hung API may delay).
    ``config_map_collected``: true when the heartbeat Lease owns the executor ConfigMap (its delete then
    collects the map, so the map's own delete is skipped). ``stop_roller``: cancels the executor roller's
    next look, before anything else stops (no executor is decommissioned by a roll during the stop)."""
    # Over 60 lines only by its parameters and their docs: each is a part stop() must reach.
    steps = _stop_steps(
        conf,
        app_id,
        api,
        sources,
        allocator,
        operations,
        scheduler,
        has_config_map=has_config_map,
        has_pod_group=has_pod_group,
        has_auth_secret=has_auth_secret,
        config_map_collected=config_map_collected if delete_heartbeat is not None else None,
    )
    if write_timeline is not None:
        after = next(i for i, (name, _) in enumerate(steps) if name == "stop the allocator") + 1
        steps.insert(after, ("write the executor timeline", write_timeline))
    if stop_roller is not None:
        steps.insert(0, ("stop the executor roller", stop_roller))
    if stop_metrics is not None:
        steps.insert(0, ("stop the metrics server", stop_metrics))
    if delete_heartbeat is not None:
        steps.insert(_lease_step_at(steps, conf), ("delete the heartbeat lease", delete_heartbeat))
    stop_sequence: StopSequence
    if owns_api:
        # Deletes still being retried in the background need the client: the last one closes it.

        def close_client() -> None:
            if not stop_sequence.retrying:
                api.close()

        steps.append(("close the API client", close_client))
    stop_sequence = StopSequence(
        steps,
        background=DELETE_STEPS,
        retryable=_worth_retrying,
        on_retries_done=api.close if owns_api else None,
        timeout=conf.lifecycle.stop_timeout,
    )
    return stop_sequence


def _lease_step_at(steps: list[Step], conf: KubernetesConf) -> int:
    """Where the heartbeat Lease's delete goes: last, unless the Lease owns the executor pods. Then it goes
    just before their collection delete, one quick request that has the garbage collector take whatever
    that delete leaves: at 10,000 pods kube-apiserver takes longer than the request timeout to delete them
    all, stop() returns after ``spark.kubernetes.stopTimeout``, and a driver that exits right after it
    would never have reached a Lease delete placed last."""
    if pods_follow_lease(conf):
        return next(i for i, (name, _) in enumerate(steps) if name == "delete the executor pods")
    return len(steps)


def _stop_steps(
    conf: KubernetesConf,
    app_id: str,
    api: KubernetesApi,
    sources: Sources,
    allocator: PodsAllocator,
    operations: ExecutorOperations | None,
    scheduler: Scheduler | None,
    *,
    has_config_map: bool,
    has_pod_group: bool,
    has_auth_secret: bool = False,
    config_map_collected: Callable[[], bool] | None = None,
) -> list[Step]:
    watch_source = sources.watch_source
    steps: list[Step] = [
        # Nothing reacts to pod changes from here on, but the watch keeps the store's view current
        # while the executors exit (see let_executors_exit).
        ("stop the snapshot subscribers", sources.store.stop_delivering),
        ("stop the executor polling", sources.polling_source.stop),
        ("stop the allocator", allocator.halt),
    ]
    exit_wait = conf.lifecycle.stop_exit_wait
    if conf.lifecycle.delete_on_termination and operations is not None and exit_wait > 0:
        ops, store = operations, sources.store

        def running_in_view() -> int:
            return sum(state.phase is PodPhase.RUNNING for state in store.current().pods.values())

        def let_executors_exit() -> None:
            # A live watch tells when they are gone at no cost; without one, the pods are listed.
            live = bool(watch_source.health().get("alive"))
            if live:
                ops.wait_for_executors_to_exit(exit_wait, running_in_view, pause=VIEW_POLL)
            else:
                ops.wait_for_executors_to_exit(exit_wait)

        steps.append(("let the executors exit", let_executors_exit))
    steps += [
        ("stop the executor watch", watch_source.stop),
        ("stop the snapshot store", sources.store.stop),
    ]
    if scheduler is not None:
        grace = conf.snapshots.subscribers_shutdown_grace_period
        threads = scheduler
        steps.append(("stop the backend threads", functools.partial(threads.shutdown, grace)))
    return steps + _delete_steps(
        conf,
        app_id,
        api,
        allocator,
        has_config_map=has_config_map,
        has_pod_group=has_pod_group,
        has_auth_secret=has_auth_secret,
        config_map_collected=config_map_collected,
    )


def _delete_steps(
    conf: KubernetesConf,
    app_id: str,
    api: KubernetesApi,
    allocator: PodsAllocator,
    *,
    has_config_map: bool,
    has_pod_group: bool,
    has_auth_secret: bool,
    config_map_collected: Callable[[], bool] | None,
) -> list[Step]:
    """The deletes of what the application created, once nothing runs that could create more."""
    namespace = conf.namespace
    app = app_selector(app_id)
    executors = executor_selector(app_id)
    steps: list[Step] = []

    def delete(resource: Any, selector: str) -> Callable[[], None]:
        return functools.partial(api.delete_collection, resource, namespace, label_selector=selector)

    # A client-mode driver (no driver pod) has no driver service, and the claims of its executors are
    # owned by their pods (garbage-collected with them): two requests spared unless it made claims.
    cluster_mode = bool(conf.driver.pod_name)
    if conf.driver.delete_service_on_termination and cluster_mode:
        steps.append(("delete the driver services", delete(SERVICES, app)))
    if conf.driver.own_pvc:
        delete_pvcs = delete(PVCS, app)

        def delete_claims() -> None:
            if cluster_mode or allocator.pvc_counter > 0:
                delete_pvcs()

        steps.append(("delete the application's PVCs", delete_claims))
    if conf.lifecycle.delete_on_termination:
        if conf.allocation.allocator != "direct":
            # First the StatefulSets/Deployments, whose controllers would otherwise replace the pods.
            steps.append(("delete the executor owners", allocator.delete_owned))
        steps.append(("delete the executor pods", delete(PODS, executors)))
        if has_config_map:
            delete_config_maps = delete(CONFIG_MAPS, executors)
            collected = config_map_collected

            def delete_maps() -> None:
                if collected is None or not collected():
                    delete_config_maps()

            steps.append(("delete the executor config maps", delete_maps))
    if has_auth_secret:  # even when the pods are kept: a secret outlives its use only as a leak
        steps.append(("delete the executor auth secrets", delete(SECRETS, executors)))
    if has_pod_group:
        steps.append(("delete the PodGroup", delete(POD_GROUPS, app)))
    return steps


def timeline_writer(path: str, monitor: ExecutorMonitor, title: str) -> Callable[[], None]:
    """The stop step that writes the executor timeline to ``path`` (a failure is logged, not raised:
    a report must not keep the cleanup from going on). A path that cannot be written is a
    :class:`ConfigError` now, at start, rather than a warning after the whole run."""
    _check_writable(path)

    def write() -> None:
        page = render_html(monitor.timeline(title))
        target = Path(path)
        partial = target.with_name(target.name + PARTIAL_SUFFIX)
        try:
            partial.write_text(page, encoding="utf-8")
            partial.replace(target)  # a reader never sees half a page
        except OSError as error:
            log.warning("Could not write the executor timeline to %s: %s", path, error)
            return
        log.info("Wrote the executor timeline to %s", path)

    return write


PARTIAL_SUFFIX = ".partial"  # the page is written beside its target, then renamed


def _check_writable(path: str) -> None:
    target = Path(path)
    folder, told = target.parent, f"spark.kubernetes.report.timeline={path}"
    _check_name_fits(target, told)
    if target.is_dir():
        raise ConfigError(f"{told} is a directory: name the HTML file, e.g. {target / 'timeline.html'}")
    if not folder.is_dir():
        raise ConfigError(f"{told}: no directory {folder}: create it, or name a file in an existing one")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConfigError(f"{told} cannot be written (permission denied): name a file you can write")


def _name_limits(folder: Path) -> tuple[int, int]:
    """The longest file name and path (bytes) where the file goes: its folder's, else the working
    directory's, else POSIX's usual 255 and 4096 (no pathconf on Windows)."""
    for where in (folder, Path(".")):
        try:
            return os.pathconf(where, "PC_NAME_MAX"), os.pathconf(where, "PC_PATH_MAX")
        except (OSError, ValueError, AttributeError):
            continue
    return 255, 4096


def _check_name_fits(target: Path, told: str) -> None:
    """Refuse a name the file system cannot hold now, rather than failing to write it after the run."""
    key = "spark.kubernetes.report.timeline"
    name_max, path_max = _name_limits(target.parent)
    for part in target.parts:
        if len(os.fsencode(part)) > name_max:
            raise ConfigError(
                f"{told}: the name {part[:40]!r}... is {len(os.fsencode(part))} bytes, more than the "
                f"{name_max} a file name may have here: use a shorter name",
                key=key,
                value=str(target),
            )
    if len(os.fsencode(target.name + PARTIAL_SUFFIX)) > name_max:
        raise ConfigError(
            f"{told}: the file name must leave room for the {PARTIAL_SUFFIX!r} suffix of the page "
            f"being written ({name_max - len(PARTIAL_SUFFIX)} bytes at most here): use a shorter name",
            key=key,
            value=str(target),
        )
    if len(os.fsencode(os.path.abspath(target))) >= path_max:
        raise ConfigError(
            f"{told}: the path is longer than the {path_max} bytes a path may have here: use a shorter one",
            key=key,
            value=str(target),
        )


def _worth_retrying(error: BaseException) -> bool:
    """A stop step is retried in the background unless the API refused it for good."""
    return not isinstance(error, ApiError) or is_retryable(error)
