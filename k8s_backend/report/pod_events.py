"""What Kubernetes Events tell of executor pods that are gone, for ``k8s-backend status --timeline``.

A deleted pod is gone from the API, but the Events about it (the scheduler's ``FailedScheduling`` and
``Scheduled``, the kubelet's ``Started``, ``Killing`` when it stops the container of a deleted pod, an
eviction) stay until the API server's event TTL (one hour by default). An Event names its pod, not the
pod's labels, so the executor id comes from the name, ``<prefix>-exec-<id>``, for a prefix the caller
knows. What Events cannot tell: when the pod was created (its first Event is a little later), when it
ended if it ended by itself, and its exit code.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from k8s_backend.kube.port import Obj
from k8s_backend.report.builders import Move
from k8s_backend.snapshots.states import parse_timestamp

_SLACK = 2.0  # s: Events are timed by other clocks (and core/v1 times have whole seconds only)
GONE = "its pod was deleted: its exit code is not known; its last Event is at this time"


def event_time(event: Obj) -> float | None:
    """When an Event first happened (``firstTimestamp``, else ``eventTime``, else its last or creation)."""
    for value in (
        event.get("firstTimestamp"),
        event.get("eventTime"),
        event.get("lastTimestamp"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    ):
        when = parse_timestamp(value)
        if when is not None:
            return when
    return None


def executor_id_of(pod_name: str, prefixes: Iterable[str]) -> int | None:
    """The executor id in ``<prefix>-exec-<id>`` for one of ``prefixes``; None if it names no executor."""
    for prefix in prefixes:
        match = re.fullmatch(re.escape(prefix) + r"-exec-(\d+)", pod_name)
        if match:
            return int(match.group(1))
    return None


def gone_executor_moves(
    events: Iterable[Obj], *, prefixes: Collection[str], live: Collection[str], since: float | None = None
) -> dict[int, list[Move]]:
    """The moves of the executors whose pods are gone (not named in ``live``), from their pods' Events;
    ``since``: when the application started (Events before it are an earlier run's of the same names)."""
    by_executor: dict[int, list[tuple[float, Obj]]] = {}
    for event in events:
        involved = event.get("involvedObject") or {}
        name = str(involved.get("name") or "")
        when = event_time(event)
        if involved.get("kind") != "Pod" or name in live or when is None:
            continue
        if since is not None and when < since - _SLACK:
            continue
        executor_id = executor_id_of(name, prefixes)
        if executor_id is not None:
            by_executor.setdefault(executor_id, []).append((when, event))
    return {
        executor_id: _moves(sorted(timed, key=lambda item: item[0]))
        for executor_id, timed in by_executor.items()
    }


def _moves(timed: list[tuple[float, Obj]]) -> list[Move]:
    moves: list[Move] = []
    for when, event in timed:
        reason = str(event.get("reason") or "")
        message = " ".join(str(event.get("message") or "").split())
        state = _STATES.get(reason)
        if not moves:  # its first Event: the pod existed by then and was not running yet
            first = "running" if state == "running" else "pending"
            moves.append(Move(when, first, f"{reason}: {message}" if reason == "FailedScheduling" else ""))
            if state != "terminating":
                continue
        if state is None or state == moves[-1].state:
            continue
        moves.append(Move(when, state, f"{reason}: {message}" if message else reason))
    last = max(when for when, _ in timed)
    moves.append(Move(max(last, moves[-1].time), "deleted", GONE))
    return moves


# Events that move an executor (any other Event, such as Pulling or Created, moves nothing).
_STATES: Mapping[str, str] = {
    "Started": "running",
    "Killing": "terminating",
    "Evicted": "terminating",
    "Preempted": "terminating",
}
