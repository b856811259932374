"""``k8s-backend gc``: delete what applications whose driver is gone left behind.

Candidates are the objects labelled ``spark-app-selector``: executor pods, ConfigMaps, Services and
PVCs. They are judged per application, and the rule is safe by default: nothing of a running
application is deleted.

1. An application that still has a driver pod (``spark-role=driver``) is alive, whatever its phase:
   its objects go with that pod when it is deleted. Nothing is touched.
2. An application whose objects name a driver pod (an owner reference to a pod, or the
   ``k8s-backend.io/driver-pod`` annotation cluster mode puts on them) is gone when that pod no
   longer exists (same uid, or same name and application id): all its objects are deleted.
3. A client-mode driver (outside the cluster) keeps a heartbeat Lease (:mod:`k8s_backend.backend.heartbeat`)
   that its objects name (``k8s-backend.io/heartbeat-lease``). Its application is alive while that
   Lease is fresh, and gone, Pending pods included, once the Lease expired (its last renewal plus its
   duration is more than :data:`CLOCK_SKEW` ago) or was deleted while objects still name it (objects
   younger than :data:`CLOCK_SKEW` are spared: the driver creates its Lease just after its ConfigMap).
4. An application with no trace of a driver at all (an older client-mode driver, or one with the
   heartbeat turned off): whether that driver is alive cannot be seen from here, so its objects are
   kept, unless ``--all-orphans`` is given; even then an application with a Pending or Running
   executor pod is kept (stop it where its driver runs, or with ``k8s-backend kill``).

Objects already being deleted are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from k8s_backend.cli.common.console import Console
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION, HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.leases import lease_expiry, parse_time
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    LEASES,
    PODS,
    PVCS,
    SECRETS,
    SERVICES,
    KubernetesApi,
    NotFoundError,
    Obj,
    Resource,
)
from k8s_backend.pods.constants import DRIVER_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL

# The Lease last: it is deleted last.
KINDS: tuple[Resource, ...] = (PODS, SERVICES, CONFIG_MAPS, SECRETS, PVCS, LEASES)
CLOCK_SKEW = 30.0  # seconds of disagreement allowed between the driver's clock and this one


@attrs.frozen
class Leftover:
    """One object of an application."""

    resource: Resource
    namespace: str
    name: str
    obj: Obj

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.obj.get("metadata") or {}).get("labels") or {})

    def describe(self) -> str:
        return f"{self.resource.kind.lower()} {self.namespace}/{self.name}"


@attrs.frozen
class Verdict:
    """What gc decided for one application, and why."""

    namespace: str
    app_id: str
    delete: bool
    reason: str
    objects: tuple[Leftover, ...]


def collect(
    api: KubernetesApi, namespace: str | None, selector: str = ""
) -> dict[tuple[str, str], list[Leftover]]:
    """Every labelled object, grouped by (namespace, application id)."""
    groups: dict[tuple[str, str], list[Leftover]] = {}
    label_selector = ",".join(s for s in (SPARK_APP_ID_LABEL, selector) if s)
    for resource in KINDS:
        for obj in api.list(resource, namespace, label_selector=label_selector).items:
            meta = obj.get("metadata") or {}
            ns = str(meta.get("namespace") or namespace or "")
            app_id = str((meta.get("labels") or {}).get(SPARK_APP_ID_LABEL, ""))
            groups.setdefault((ns, app_id), []).append(Leftover(resource, ns, str(meta.get("name")), obj))
    return groups


def _owner_pods(objects: Iterable[Leftover]) -> set[tuple[str, str]]:
    """(name, uid) of pods named as owners; uid "" for pods named by the annotation."""
    owners: set[tuple[str, str]] = set()
    for item in objects:
        meta = item.obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "Pod" and ref.get("name"):
                owners.add((str(ref["name"]), str(ref.get("uid") or "")))
        annotated = (meta.get("annotations") or {}).get(DRIVER_POD_ANNOTATION)
        if annotated:
            owners.add((str(annotated), ""))
    return owners


def _pod_exists(api: KubernetesApi, namespace: str, name: str, uid: str, app_id: str) -> bool:
    try:
        pod = api.get(PODS, namespace, name)
    except NotFoundError:
        return False
    meta = pod.get("metadata") or {}
    if uid:
        return str(meta.get("uid")) == uid
    return (meta.get("labels") or {}).get(SPARK_APP_ID_LABEL) == app_id


def _has_live_executor(objects: Iterable[Leftover]) -> bool:
    return any(
        item.resource == PODS
        and not (item.obj.get("metadata") or {}).get("deletionTimestamp")
        and ((item.obj.get("status") or {}).get("phase") or "Pending") in ("Pending", "Running")
        for item in objects
    )


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _heartbeat(
    api: KubernetesApi, namespace: str, objects: Sequence[Leftover], now: float
) -> tuple[bool, str] | None:
    """(delete, reason) from the heartbeat Leases the objects name or are; None when there is none."""
    leases = {o.name: o.obj for o in objects if o.resource == LEASES}
    named = {
        str(note)
        for o in objects
        if (note := ((o.obj.get("metadata") or {}).get("annotations") or {}).get(HEARTBEAT_LEASE_ANNOTATION))
    }
    if not leases and not named:
        return None
    for name in sorted(named - set(leases)):
        try:  # read by name: a -l selector would not match the Lease, which has no user labels
            leases[name] = api.get(LEASES, namespace, name)
        except NotFoundError:
            continue
    if not leases:
        created = [parse_time((o.obj.get("metadata") or {}).get("creationTimestamp")) for o in objects]
        if any(t is None or now - t < CLOCK_SKEW for t in created):
            return False, f"its heartbeat lease {min(named)} does not exist yet (a driver starting?): kept"
        return True, f"its driver's heartbeat lease {min(named)} is gone"
    expiries = {name: lease_expiry(lease) for name, lease in leases.items()}
    if any(expiry is None for expiry in expiries.values()):
        return False, "its heartbeat lease has no renew time or duration: kept"
    latest = max(e for e in expiries.values() if e is not None)
    if now <= latest + CLOCK_SKEW:
        return False, f"its driver's heartbeat is fresh (expires in {_ago(latest - now)})"
    return True, f"its driver's heartbeat expired {_ago(now - latest)} ago"


def judge(
    api: KubernetesApi,
    namespace: str,
    app_id: str,
    objects: Sequence[Leftover],
    *,
    all_orphans: bool,
    now: float = 0.0,
) -> Verdict:
    """Apply the module's rules to one application's objects."""
    live = tuple(o for o in objects if not (o.obj.get("metadata") or {}).get("deletionTimestamp"))

    def verdict(delete: bool, reason: str) -> Verdict:
        return Verdict(namespace, app_id, delete, reason, live if delete else ())

    drivers = [o for o in objects if o.resource == PODS and o.labels.get(SPARK_ROLE_LABEL) == DRIVER_ROLE]
    if drivers:
        return verdict(False, f"its driver pod {drivers[0].name} exists")
    owners = _owner_pods(objects)
    if owners:
        alive = [name for name, uid in sorted(owners) if _pod_exists(api, namespace, name, uid, app_id)]
        if alive:
            return verdict(False, f"its driver pod {alive[0]} exists")
        return verdict(True, f"its driver pod {sorted(owners)[0][0]} is gone")
    heartbeat = _heartbeat(api, namespace, objects, now)
    if heartbeat is not None:
        return verdict(*heartbeat)
    if not all_orphans:
        return verdict(False, "no driver pod is known (client mode?): kept; --all-orphans deletes it")
    if _has_live_executor(objects):
        return verdict(False, "it has Pending or Running executor pods: kept")
    return verdict(True, "no driver pod is known and no executor runs (--all-orphans)")


def collect_garbage(
    api: KubernetesApi,
    namespace: str | None,
    console: Console,
    *,
    dry_run: bool = False,
    all_orphans: bool = False,
    selector: str = "",
    now: float = 0.0,
) -> list[Verdict]:
    """Judge every application found, delete what rules 2 and 3 (or 4 with ``all_orphans``) allow; report.

    ``now``: the wall-clock time (seconds since the epoch) heartbeat Leases are compared with.
    """
    verdicts = [
        judge(api, ns, app_id, objects, all_orphans=all_orphans, now=now)
        for (ns, app_id), objects in sorted(collect(api, namespace, selector).items())
    ]
    deleted = 0
    for verdict in verdicts:
        if not verdict.delete:
            console.info(f"keep application {verdict.app_id} in {verdict.namespace}: {verdict.reason}")
            continue
        console.info(f"application {verdict.app_id} in {verdict.namespace}: {verdict.reason}")
        for item in verdict.objects:
            if dry_run:
                console.result(f"would delete {item.describe()}")
                continue
            try:
                api.delete(item.resource, item.namespace, item.name)
            except NotFoundError:
                continue
            deleted += 1
            console.result(f"deleted {item.describe()}")
    doomed = sum(len(v.objects) for v in verdicts if v.delete)
    if dry_run:
        console.info(f"gc (dry run): {doomed} objects would be deleted")
    else:
        console.info(f"gc: {deleted} objects deleted")
    return verdicts
