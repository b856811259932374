"""The heartbeat Lease of a client-mode driver (``coordination.k8s.io/v1``): its name, its body, its times,
and the executors registered with the driver as of its last renewal.

A cluster-mode driver keeps no Lease: it writes the same annotation on its own pod, with the time it
wrote it (:mod:`k8s_backend.backend.registration_publisher`); :func:`registered_executors` reads either
object.

The driver writes it (:mod:`k8s_backend.backend.heartbeat`); ``k8s-backend gc`` and ``kill`` read it. Both
sides build the name from the application id here, so that a pod's annotation, the Lease and the CLI's
lookup cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone

from k8s_backend.kube.labels import SPARK_APP_ID_LABEL
from k8s_backend.kube.port import LEASES, Obj

LEASE_NAME_SUFFIX = "-driver-heartbeat"
# The executors registered with the driver as of the Lease's last renewal: a JSON object of executor id
# to registration time (RFC 3339), written by each renewal (no request of its own), read by `status`.
REGISTERED_EXECUTORS_ANNOTATION = "k8s-backend.io/registered-executors"
# On a cluster-mode driver pod (which has no renewTime): when the driver wrote the annotation above, RFC 3339.
REGISTERED_EXECUTORS_AS_OF_ANNOTATION = "k8s-backend.io/registered-executors-as-of"
_SUBDOMAIN_MAX = 253
_NOT_NAME = re.compile(r"[^a-z0-9]+")


def heartbeat_lease_name(app_id: str) -> str:
    """``<app-id>-driver-heartbeat``, a valid DNS-1123 subdomain for any application id.

    An id that is not already lower-case letters, digits and dashes is rewritten to those, with a
    short hash of the original appended, so that two ids that differ only in such characters do not
    share a Lease.
    """
    base = _NOT_NAME.sub("-", app_id.lower()).strip("-")
    if base != app_id:
        base = f"{base}-{hashlib.sha256(app_id.encode()).hexdigest()[:8]}".strip("-")
    return base[: _SUBDOMAIN_MAX - len(LEASE_NAME_SUFFIX)].rstrip("-") + LEASE_NAME_SUFFIX


def micro_time(seconds: float) -> str:
    """An instant as the API server's MicroTime: RFC 3339 with microseconds, in UTC."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (Time or MicroTime), or None if unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def lease_seconds(duration: float) -> int:
    """``spec.leaseDurationSeconds`` (a positive whole number) for a duration in seconds."""
    return max(1, math.ceil(duration))


def heartbeat_lease(
    name: str, namespace: str, app_id: str, *, holder: str, duration: float, now: float
) -> Obj:
    """A new heartbeat Lease, acquired and renewed at ``now``."""
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {SPARK_APP_ID_LABEL: app_id}},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": lease_seconds(duration),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
        },
    }


def lease_expiry(lease: Obj) -> float | None:
    """When a Lease expires (last renewal, else acquisition, plus its duration); None if it cannot tell."""
    spec = lease.get("spec") or {}
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int) or isinstance(duration, bool):
        return None
    return renewed + duration


def heartbeat_lease_for(app_id: str, *, driver_pod_name: str | None, enabled: bool) -> str | None:
    """The heartbeat Lease an application's driver keeps: only a client-mode one (no driver pod), if enabled.

    The one rule for the backend (which creates it) and the pod builder (which annotates pods with it).
    """
    return heartbeat_lease_name(app_id) if enabled and not driver_pod_name else None


def registered_executors_annotation(registered: Mapping[str, float]) -> str:
    """The annotation's value: executor id to registration time, by executor id."""
    order = sorted(registered, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i))
    return json.dumps({i: micro_time(registered[i]) for i in order}, separators=(",", ":"))


def registered_executors(lease: Obj) -> dict[str, float] | None:
    """Executor id to registration time as the Lease (or a cluster-mode driver pod) last told them; None if
    it does not tell (an older driver, or an unreadable annotation)."""
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(REGISTERED_EXECUTORS_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    times = {str(k): parse_time(v) for k, v in found.items()}
    return {k: v for k, v in times.items() if v is not None}


def registrations_written_at(pod: Obj) -> float | None:
    """When a cluster-mode driver last wrote its registered executors on its pod; None if it did not."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return parse_time(annotations.get(REGISTERED_EXECUTORS_AS_OF_ANNOTATION))
