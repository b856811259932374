"""What a driver tells ``k8s-backend status --timeline`` besides its registered executors: when its backend
started, its executor pod name prefix, its recent targets and its recent markers (kills, decommissions, API
errors).

The driver writes it as one annotation, ``k8s-backend.io/executor-activity``, in the same patch as its
registered executors (:mod:`k8s_backend.kube.leases`): a client-mode driver on its heartbeat Lease, a
cluster-mode one on its own pod. It costs no request of its own. It is bounded (the last
:data:`KEPT` target changes and markers, each marker's text cut at :data:`TEXT_LIMIT` characters), so the
annotation stays a few KiB whatever the run's length; what is older is gone, and the CLI says so.

The prefix lets the CLI tell which Kubernetes Events were about executor pods deleted since (an Event
names its pod, not its labels), and the start which of them are this run's, not an earlier run's of the
same prefix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import attrs

from k8s_backend.kube.leases import micro_time, parse_time
from k8s_backend.kube.port import Obj

ACTIVITY_ANNOTATION = "k8s-backend.io/executor-activity"
KEPT = 20  # target changes and markers kept, each
TEXT_LIMIT = 200  # characters of a marker's text


@attrs.frozen
class Activity:
    """When the driver's backend started, its executor pod name prefix, its last target changes
    ``(time, total)`` and its last markers ``(time, kind, text)``; times are epoch seconds."""

    pod_name_prefix: str = ""
    started_at: float | None = None
    target: tuple[tuple[float, int], ...] = ()
    markers: tuple[tuple[float, str, str], ...] = ()
    dropped_target: bool = False  # older target changes were not kept
    dropped_markers: bool = False  # older markers were not kept


def activity_annotation(
    pod_name_prefix: str,
    started_at: float,
    target: Iterable[tuple[float, int]],
    markers: Iterable[tuple[float, str, str]],
) -> str:
    """The annotation's value: the last :data:`KEPT` target changes and markers, compact JSON."""
    steps, marks = list(target), list(markers)
    document: dict[str, object] = {
        "prefix": pod_name_prefix,
        "start": micro_time(started_at),
        "target": [[micro_time(t), int(n)] for t, n in steps[-KEPT:]],
        "markers": [[micro_time(t), kind, text[:TEXT_LIMIT]] for t, kind, text in marks[-KEPT:]],
    }
    if len(steps) > KEPT:
        document["olderTarget"] = True
    if len(marks) > KEPT:
        document["olderMarkers"] = True
    return json.dumps(document, separators=(",", ":"))


def executor_activity(obj: Obj) -> Activity | None:
    """The activity a Lease or a driver pod tells; None if it tells none (or none readable)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ACTIVITY_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    target: list[tuple[float, int]] = []
    for item in document.get("target") or []:
        when = parse_time(item[0]) if isinstance(item, list) and len(item) == 2 else None
        if when is not None and isinstance(item[1], int):
            target.append((when, item[1]))
    markers: list[tuple[float, str, str]] = []
    for item in document.get("markers") or []:
        when = parse_time(item[0]) if isinstance(item, list) and len(item) == 3 else None
        if when is not None:
            markers.append((when, str(item[1]), str(item[2])))
    return Activity(
        pod_name_prefix=str(document.get("prefix") or ""),
        started_at=parse_time(document.get("start")),
        target=tuple(target),
        markers=tuple(markers),
        dropped_target=bool(document.get("olderTarget")),
        dropped_markers=bool(document.get("olderMarkers")),
    )
