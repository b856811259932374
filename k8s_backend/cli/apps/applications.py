"""Finding applications on the cluster, and the ``status``, ``kill`` and ``list`` subcommands.

An application is named as spark-submit's ``--status``/``--kill`` name it, by submission id
``<namespace>:<driver pod name>`` (the name may be a glob such as ``spark-pi-*``), or by its
application id (``spark-<32 hex digits>``, the ``spark-app-selector`` label). A cluster-mode
application has a driver pod (``spark-role=driver``); a client-mode application only has executor
pods (and, since drivers keep one, a heartbeat Lease): its driver runs outside the cluster.
"""

from __future__ import annotations

import contextlib
import fnmatch
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.status_watch import describe_pod, termination_message
from k8s_backend.conf import syntax
from k8s_backend.kube.activity import Activity
from k8s_backend.kube.labels import (
    DRIVER_ROLE,
    EXECUTOR_ROLE,
    HEARTBEAT_LEASE_ANNOTATION,
    SPARK_APP_ID_LABEL,
    SPARK_APP_NAME_LABEL,
    app_selector,
    executor_selector,
    role_selector,
)
from k8s_backend.kube.leases import heartbeat_lease_name, lease_expiry
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, SECRETS, KubernetesApi, NotFoundError, Obj
from k8s_backend.tracking.times import iso_time

DRIVERS = role_selector(DRIVER_ROLE)
EXECUTORS = role_selector(EXECUTOR_ROLE)
LIVE_PHASES = ("Pending", "Running", "Unknown")
TERMINATION_LINES = 20  # of a failed driver's termination message, shown by `status`


@attrs.frozen
class Application:
    """A driver pod (None for client mode) and the executor pods of one application id."""

    namespace: str
    app_id: str
    driver: Obj | None
    executors: tuple[Obj, ...] = ()
    # Executor id to registration time as the driver last told, in its heartbeat Lease (client mode) or
    # on its pod (cluster mode); None: unknown. See k8s_backend.cli.apps.registrations.
    registered: Mapping[str, float] | None = None
    registered_as_of: float | None = None  # when the driver wrote them (the Lease's renewal)
    # Its pod name prefix, last targets and markers, written with them (k8s_backend.kube.activity).
    activity: Activity | None = None

    @property
    def registered_count(self) -> int | None:
        """How many executors are registered with the driver (None: unknown)."""
        return None if self.registered is None else sum(1 for i in self.registered if i.isdigit())

    @property
    def submission_id(self) -> str | None:
        return None if self.driver is None else f"{self.namespace}:{name_of(self.driver)}"

    @property
    def app_name(self) -> str:
        pods = [self.driver] if self.driver is not None else list(self.executors)
        for pod in pods:
            name = labels_of(pod).get(SPARK_APP_NAME_LABEL)
            if name:
                return str(name)
        return "-"


def name_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def labels_of(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def namespace_of(obj: Obj, default: str = "") -> str:
    return str((obj.get("metadata") or {}).get("namespace") or default)


def phase_of(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def parse_app_ref(text: str, namespace: str) -> tuple[str, str]:
    """``(namespace, pattern)`` of ``ns:pattern`` (spark-submit's submission id) or of a bare pattern."""
    ns, colon, pattern = text.partition(":")
    if colon:
        if not ns or not pattern:
            raise ValueError(f"{text!r}: a submission id is NAMESPACE:DRIVER_POD (a glob is allowed)")
        return ns, pattern
    return namespace, text


def _join(*selectors: str) -> str:
    return ",".join(s for s in selectors if s)


def find_applications(
    api: KubernetesApi, namespace: str, pattern: str, selector: str = "", *, leases: bool = False
) -> list[Application]:
    """The applications whose driver pod name matches ``pattern`` (a glob) or whose id is ``pattern``.

    ``leases``: a client-mode application whose executor pods are all gone is still found by its
    driver's heartbeat Lease (for ``kill``, which deletes it).
    """
    drivers = api.list(PODS, namespace, label_selector=_join(DRIVERS, selector)).items
    matched = [
        pod
        for pod in drivers
        if fnmatch.fnmatchcase(name_of(pod), pattern) or labels_of(pod).get(SPARK_APP_ID_LABEL) == pattern
    ]
    if matched:
        return [_with_executors(api, namespace_of(p, namespace), p) for p in matched]
    if syntax.label_value_problem(pattern) is not None:
        return []  # a glob or a name that cannot be an application id
    executors = api.list(
        PODS, namespace, label_selector=executor_selector(pattern)
    ).items
    if executors or (leases and _lease_exists(api, namespace, heartbeat_lease_name(pattern))):
        return [Application(namespace, pattern, None, tuple(executors))]
    return []


def _lease_exists(api: KubernetesApi, namespace: str, name: str) -> bool:
    try:
        api.get(LEASES, namespace, name)
    except NotFoundError:
        return False
    return True


def _with_executors(api: KubernetesApi, namespace: str, driver: Obj) -> Application:
    app_id = labels_of(driver).get(SPARK_APP_ID_LABEL, "")
    executors = api.list(
        PODS, namespace, label_selector=executor_selector(app_id)
    ).items
    return Application(namespace, app_id, driver, tuple(executors))


def all_applications(api: KubernetesApi, namespace: str | None, selector: str = "") -> list[Application]:
    """Every application with a driver pod or executor pods (``namespace=None``: all namespaces)."""
    drivers = api.list(PODS, namespace, label_selector=_join(DRIVERS, selector)).items
    executors = api.list(PODS, namespace, label_selector=_join(EXECUTORS, selector)).items
    by_app: dict[tuple[str, str], list[Obj]] = {}
    for pod in executors:
        key = (namespace_of(pod, namespace or ""), labels_of(pod).get(SPARK_APP_ID_LABEL, ""))
        by_app.setdefault(key, []).append(pod)
    apps = []
    for driver in drivers:
        key = (namespace_of(driver, namespace or ""), labels_of(driver).get(SPARK_APP_ID_LABEL, ""))
        apps.append(Application(key[0], key[1], driver, tuple(by_app.pop(key, []))))
    apps += [Application(ns, app_id, None, tuple(pods)) for (ns, app_id), pods in by_app.items()]
    return sorted(apps, key=lambda a: (a.namespace, _created(a), a.app_id))


def _created(app: Application) -> str:
    pod = app.driver or (app.executors[0] if app.executors else {})
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def age(timestamp: str | None, now: float) -> str:
    """``5s``, ``3m``, ``2h``, ``4d`` since an RFC 3339 timestamp ("-" if unknown)."""
    if not timestamp:
        return "-"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "-"
    seconds = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def executor_summary(executors: Iterable[Obj]) -> str:
    """``3 (2 Running, 1 Pending)`` or ``0``."""
    pods = list(executors)
    if not pods:
        return "0"
    counts: dict[str, int] = {}
    for pod in pods:
        phase = "Terminating" if (pod.get("metadata") or {}).get("deletionTimestamp") else phase_of(pod)
        counts[phase] = counts.get(phase, 0) + 1
    return f"{len(pods)} (" + ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items())) + ")"


def show_status(apps: Sequence[Application], console: Console, now: float) -> None:
    """The ``status`` report of each application."""
    for app in apps:
        console.result(f"Application {app.app_name}")
        console.result(
            f"  submission ID:  {app.submission_id or '- (client mode: the driver runs outside the cluster)'}"
        )
        console.result(f"  application ID: {app.app_id}")
        if app.driver is not None:
            console.result(f"  driver:         {describe_pod(app.driver)}")
            created = (app.driver.get("metadata") or {}).get("creationTimestamp")
            console.result(f"  created:        {created or '-'} ({age(created, now)} ago)")
            message = termination_message(app.driver)
            if message:
                console.result("  termination message (the end of the driver's log):")
                for line in message.splitlines()[-TERMINATION_LINES:]:
                    console.result(f"    {line}")
        console.result(f"  executors:      {executor_summary(app.executors)}")
        console.result(f"  registered:     {registered_summary(app)}")


def registered_summary(app: Application) -> str:
    """``3 with the driver (as of <time>)``, or ``-`` with why it is not known."""
    count = app.registered_count
    if count is None:
        return "- (not known: the driver does not tell)"
    as_of = "" if app.registered_as_of is None else f" (as of {iso_time(app.registered_as_of)})"
    return f"{count} with the driver{as_of}"


def show_list(apps: Sequence[Application], console: Console, now: float) -> None:
    """The ``list`` table."""
    rows = [("SUBMISSION ID", "APPLICATION ID", "NAME", "DRIVER", "EXECUTORS", "REGISTERED", "AGE")]
    for app in apps:
        driver = phase_of(app.driver) if app.driver is not None else "(client mode)"
        if app.driver is not None and (app.driver.get("metadata") or {}).get("deletionTimestamp"):
            driver = "Terminating"
        created = _created(app) or None
        rows.append(
            (
                app.submission_id or "-",
                app.app_id,
                app.app_name,
                driver,
                executor_summary(app.executors),
                "-" if app.registered_count is None else str(app.registered_count),
                age(created, now),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        console.result("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


@attrs.frozen
class KillResult:
    """What ``kill`` did: deleted driver pods, and pods still present when it stopped waiting."""

    deleted: tuple[str, ...]
    remaining: tuple[str, ...] = ()


def kill_applications(
    api: KubernetesApi,
    apps: Sequence[Application],
    console: Console,
    *,
    grace_period: int | None = None,
    wait: bool = True,
    timeout: float = 60.0,
    poll: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
) -> KillResult:
    """Delete each application's driver pod and executor pods; optionally wait until all are gone.

    Deleting the driver pod is what stops a cluster-mode application (its Service and ConfigMap go
    with it, as they are owned by the pod); executors are deleted directly too rather than left to
    the garbage collector, so that nothing of the application keeps running. A client-mode
    application has no driver pod: what its driver's stop() deletes is deleted instead (see
    :func:`kill_client_mode`).
    """
    deleted = []
    for app in apps:
        if app.driver is None:
            deleted.append(kill_client_mode(api, app, console, grace_period=grace_period, now=wall_clock()))
            continue
        name = name_of(app.driver)
        with contextlib.suppress(NotFoundError):
            api.delete(PODS, app.namespace, name, grace_period_seconds=grace_period)
        deleted.append(f"{app.namespace}:{name}")
        console.info(f"Deleted driver pod {app.namespace}/{name} (application {app.app_id})")
        api.delete_collection(
            PODS,
            app.namespace,
            label_selector=executor_selector(app.app_id),
            grace_period_seconds=grace_period,
        )
    if not wait or not deleted:
        return KillResult(tuple(deleted))
    deadline = clock() + timeout
    while True:
        remaining = [
            f"{app.namespace}/{name_of(pod)}"
            for app in apps
            for pod in api.list(PODS, app.namespace, label_selector=app_selector(app.app_id)).items
        ]
        if not remaining or clock() >= deadline:
            break
        sleep(poll)
    if remaining:
        console.info(f"Still terminating after {timeout:g}s: {', '.join(remaining)}")
    else:
        console.info("All pods of the application are gone")
    return KillResult(tuple(deleted), tuple(remaining))


def kill_client_mode(
    api: KubernetesApi, app: Application, console: Console, *, grace_period: int | None, now: float
) -> str:
    """Delete what a client-mode driver's stop() would: executor pods, executor ConfigMaps, then the
    heartbeat Lease (also any other Lease the pods name; last, since each delete here is waited for,
    where stop() deletes the Lease first to have the collector finish what it cannot). Returns the app
    id."""
    selector = executor_selector(app.app_id)
    leases = {heartbeat_lease_name(app.app_id)} | {
        str(note)
        for pod in app.executors
        if (note := ((pod.get("metadata") or {}).get("annotations") or {}).get(HEARTBEAT_LEASE_ANNOTATION))
    }
    alive = False
    for name in sorted(leases):
        with contextlib.suppress(NotFoundError):
            expiry = lease_expiry(api.get(LEASES, app.namespace, name))
            alive = alive or expiry is None or expiry >= now
    api.delete_collection(PODS, app.namespace, label_selector=selector, grace_period_seconds=grace_period)
    console.info(f"Deleted the executor pods of client-mode application {app.app_id} in {app.namespace}")
    api.delete_collection(CONFIG_MAPS, app.namespace, label_selector=selector)
    console.info("Deleted its executor ConfigMaps")
    api.delete_collection(SECRETS, app.namespace, label_selector=selector)
    console.info("Deleted its executor Secrets")
    for name in sorted(leases):
        try:
            api.delete(LEASES, app.namespace, name)
        except NotFoundError:
            continue
        console.info(f"Deleted its driver's heartbeat lease {app.namespace}/{name}")
    if alive:
        console.info(
            "Its driver (outside the cluster) still renewed its heartbeat: if it still runs, it will "
            "create new executors. Stop it where it runs"
        )
    return app.app_id
