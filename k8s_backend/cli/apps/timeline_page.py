"""``k8s-backend status ID --timeline PATH``: the executor timeline of a running application, drawn from
what the cluster shows of it, with a note on the page for each thing it cannot show.

What it reads, besides the executor pods ``status`` lists anyway: the driver's registered executors and
its executor activity (pod name prefix, last targets and markers; :mod:`k8s_backend.kube.activity`), read
from the driver pod (cluster mode) or its heartbeat Lease (client mode) by
:func:`~k8s_backend.cli.apps.registrations.with_registrations`, and one list of the namespace's Events, which
tells of executor pods deleted since (:mod:`k8s_backend.report.pod_events`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from k8s_backend.cli.apps.applications import Application, name_of
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.kube.activity import KEPT
from k8s_backend.kube.port import EVENTS, ApiError, KubernetesApi, Obj
from k8s_backend.report import Marker, Move, Timeline, from_pods, render_html
from k8s_backend.report.pod_events import gone_executor_moves
from k8s_backend.snapshots.states import parse_timestamp
from k8s_backend.tracking.times import iso_time

ALWAYS = (
    "Drawn by `k8s-backend status --timeline` from what the cluster shows now, not from the driver's own "
    "record (spark.kubernetes.report.timeline writes that at stop()): requested is when the pod was "
    "created (the driver's request is a little earlier, and a pod the API server refused shows nowhere), "
    "running is when its container started."
)


def _prefixes(app: Application) -> set[str]:
    """Executor pod name prefixes: the driver's published one and those of the pods still there."""
    published = "" if app.activity is None else app.activity.pod_name_prefix
    found = {published} if published else set()
    for pod in app.executors:
        match = re.fullmatch(r"(.+)-exec-\d+", name_of(pod))
        if match:
            found.add(match.group(1))
    return found


def _started(app: Application) -> float | None:
    """When the application started, as far as known: its driver pod's creation, else its backend's start
    as the driver published it (a same-named pod's Events from before are an earlier run's)."""
    if app.driver is not None:
        created = parse_timestamp((app.driver.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            return created
    return None if app.activity is None else app.activity.started_at


def _gone(api: KubernetesApi, app: Application) -> tuple[dict[int, list[Move]], str]:
    """The moves of executors whose pods are gone, from the namespace's Events, and a note on them."""
    prefixes = _prefixes(app)
    if not prefixes:
        return {}, (
            "Executors whose pods were deleted are not shown: their pod name prefix is not known (no "
            "executor pod is left and the driver publishes none), so their Events cannot be told apart."
        )
    try:
        events: list[Obj] = list(api.list(EVENTS, app.namespace).items)
    except ApiError as error:
        return {}, (
            "Executors whose pods were deleted are not shown: the namespace's Events could not be read "
            f"({error.status} {error.reason}; `list events` is needed)."
        )
    live = {name_of(pod) for pod in app.executors}
    since = _started(app)
    gone = gone_executor_moves(events, prefixes=prefixes, live=live, since=since)
    shown = ", ".join(str(i) for i in sorted(gone)) or "none"
    note = (
        f"Executors whose pods were deleted are drawn from their pods' Kubernetes Events (here: {shown}), "
        "which the API server keeps for about an hour (--event-ttl): older ones are missing. Such a row "
        "starts at the pod's first Event, and its exit code, and when it ended unless it was killed, are "
        "not known."
    )
    if since is None:
        note += (
            " When the application started is not known (no driver pod, and the driver publishes nothing), "
            "so an earlier run's Events of the same pod names would show too."
        )
    return gone, note


def _registration_note(app: Application) -> str:
    if app.registered is None:
        return (
            "Registration with the driver is not known, so no row has a registered span: the driver "
            "publishes none (a client-mode driver with spark.kubernetes.driver.heartbeat.enabled=false, "
            "or an older k8s_backend)."
        )
    as_of = "" if app.registered_as_of is None else f" as of {iso_time(app.registered_as_of)}"
    return (
        f"Registered spans: the executors registered with the driver{as_of}, as it published them; an "
        "executor that registered and has left the driver since shows none."
    )


def _activity_note(app: Application) -> str:
    activity = app.activity
    if activity is None:
        return (
            "The target over time and the markers for kills, decommissions and API errors are not known: "
            "the driver publishes none (a client-mode driver with "
            "spark.kubernetes.driver.heartbeat.enabled=false, or an older k8s_backend)."
        )
    dropped = [
        what
        for what, flag in (("target changes", activity.dropped_target), ("markers", activity.dropped_markers))
        if flag
    ]
    note = (
        f"The target and the markers are the driver's last {KEPT} target changes and last {KEPT} markers, "
        "as it last published them"
    )
    as_of = app.registered_as_of
    note += "" if as_of is None else f" ({iso_time(as_of)})"
    return note + (f"; older {' and '.join(dropped)} are not shown." if dropped else ".")


def timeline_of(api: KubernetesApi, app: Application, now: float) -> Timeline:
    """``app``'s timeline (``app`` as
    :func:`~k8s_backend.cli.apps.registrations.with_registrations` gives it)."""
    gone, gone_note = _gone(api, app)
    activity = app.activity
    return from_pods(
        f"{app.app_name} ({app.app_id}): executor timeline",
        app.executors,
        now=now,
        gone=gone,
        registered_at=app.registered,
        target=() if activity is None else activity.target,
        markers=() if activity is None else [Marker(*m) for m in activity.markers],
        notes=(ALWAYS, _registration_note(app), _activity_note(app), gone_note),
        start=None if activity is None else activity.started_at,  # where stop()'s page starts
    )


def write_timeline(api: KubernetesApi, apps: Sequence[Application], path: str, now: float) -> None:
    """The timeline of one application, written to ``path`` as HTML."""
    if len(apps) != 1:
        names = ", ".join(a.submission_id or a.app_id for a in apps)
        raise UsageError(f"--timeline writes one application's timeline; these IDs name {len(apps)}: {names}")
    page = render_html(timeline_of(api, apps[0], now))
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as error:
        raise UsageError(f"--timeline {path}: cannot be written ({error.strerror})") from None
