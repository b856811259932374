"""Turn what is known of an application into a :class:`~k8s_backend.report.timeline.Timeline`.

Two sources: the backend's executor histories (state, time and reason of every move, kept by the
executor tracker), and, for ``k8s-backend status --timeline`` of an application running elsewhere, the
executor pods themselves (creation, scheduling, container start and end times). Both are pure
functions of their input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from k8s_backend.kube.labels import SPARK_EXECUTOR_ID_LABEL
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.report.timeline import ExecutorLine, Marker, Span, Timeline
from k8s_backend.snapshots.states import parse_timestamp

ENDINGS = frozenset({"succeeded", "failed", "lost", "deleted"})
EXECUTOR_CONTAINER = "spark-kubernetes-executor"


@attrs.frozen
class Move:
    """One recorded state change of an executor (the first one is its request)."""

    time: float
    state: str
    reason: str = ""


def executor_line(
    executor_id: str, moves: Sequence[Move], now: float, registered_at: float | None = None
) -> ExecutorLine:
    """The spans of one executor's moves; a running span is split where the executor registered."""
    spans: list[Span] = []
    ended = ""
    for index, move in enumerate(moves):
        if move.state in ENDINGS:
            if move.state == "deleted" and spans and spans[-1].kind in ENDINGS:
                break  # the pod of an ended executor was cleaned up: nothing new to show
            ended = f"{move.state}" + (f": {move.reason}" if move.reason else "")
            spans.append(Span(move.state, move.time, move.time, move.reason))
            break
        end = moves[index + 1].time if index + 1 < len(moves) else now
        spans.append(Span(move.state, move.time, end, move.reason))
    if registered_at is not None:
        spans = _split_at_registration(spans, registered_at)
    return ExecutorLine(executor_id, tuple(spans), ended)


def _split_at_registration(spans: list[Span], registered_at: float) -> list[Span]:
    running = [span.start for span in spans if span.kind == "running"]
    if running:  # the driver's clock may be a little behind the API server's, which timed the pod
        registered_at = max(registered_at, running[0])
    out: list[Span] = []
    for span in spans:
        if span.kind == "running" and span.start <= registered_at < span.end:
            out.append(attrs.evolve(span, end=registered_at))
            out.append(Span("registered", registered_at, span.end, "registered with the driver"))
        else:
            out.append(span)
    return out


def from_histories(
    title: str,
    histories: Mapping[int, Sequence[Move]],
    *,
    now: float,
    start: float | None = None,
    registered_at: Mapping[int, float] | None = None,
    target: Iterable[tuple[float, int]] = (),
    markers: Iterable[Marker] = (),
) -> Timeline:
    """A timeline from the executor histories the backend kept, oldest executor first."""
    registered = registered_at or {}
    lines = tuple(
        executor_line(str(executor_id), moves, now, registered.get(executor_id))
        for executor_id, moves in sorted(histories.items())
        if moves
    )
    steps = tuple(sorted(target))
    marks = tuple(sorted(markers, key=lambda m: m.time))
    first = [m[0].time for m in histories.values() if m] + [t for t, _ in steps] + [m.time for m in marks]
    begin = start if start is not None else min(first, default=now)
    return Timeline(title, begin, max(now, begin), lines, steps, marks)


def _time(value: object) -> float | None:
    return parse_timestamp(value)


def pod_moves(pod: Obj) -> list[Move]:
    """What a pod's own times tell: created (requested), scheduled (pending), started, ended, deleted."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    moves: list[Move] = []
    created = _time(meta.get("creationTimestamp"))
    if created is None:
        return moves
    moves.append(Move(created, "requested"))
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            when = _time(condition.get("lastTransitionTime")) or created
            reason = ""
            if condition.get("status") == "False":
                why, message = condition.get("reason") or "Unschedulable", condition.get("message") or ""
                reason = f"{why}: {message}" if message else str(why)
            moves.append(Move(when, "pending", reason))
    own = explain.spark_container_status(pod, EXECUTOR_CONTAINER) or {}
    state = own.get("state") or {}
    waiting = state.get("waiting") or {}
    if waiting.get("reason") and moves[-1].state == "pending" and not moves[-1].reason:
        moves[-1] = attrs.evolve(moves[-1], reason=str(waiting["reason"]))
    started = _time((state.get("running") or state.get("terminated") or {}).get("startedAt"))
    if started is not None:
        moves.append(Move(started, "running"))
    terminated = state.get("terminated")
    # A status without times (some writers leave them out) still ended: at the last time known.
    finished = _time((terminated or {}).get("finishedAt"))
    if terminated is not None and finished is None:
        finished = started or moves[-1].time
    if terminated is not None and finished is not None:
        code = int(terminated.get("exitCode", explain.UNKNOWN_EXIT_CODE))
        why = explain.describe_exit_code(code)
        if terminated.get("reason"):
            why += f", {terminated['reason']}"
        moves.append(Move(finished, "succeeded" if code == 0 else "failed", f"exit {why}"))
    deleting = _time(meta.get("deletionTimestamp"))
    if deleting is not None:  # the time the grace period ends: the deletion was asked that much earlier
        grace = meta.get("deletionGracePeriodSeconds")
        deleting -= grace if isinstance(grace, int) and not isinstance(grace, bool) else 0
    if deleting is not None and finished is None:
        moves.append(Move(deleting, "terminating", "deletion requested"))
    return sorted(moves, key=lambda m: m.time)


def from_pods(
    title: str,
    pods: Iterable[Obj],
    *,
    now: float,
    gone: Mapping[int, Sequence[Move]] | None = None,
    registered_at: Mapping[str, float] | None = None,
    target: Iterable[tuple[float, int]] = (),
    markers: Iterable[Marker] = (),
    notes: Sequence[str] = (),
    start: float | None = None,
) -> Timeline:
    """A timeline of an application's executor pods as the API shows them now.

    ``gone``: the moves of executors whose pods are gone (from their Events, see
    :mod:`k8s_backend.report.pod_events`); ``registered_at``: executor id to the time it registered with
    the driver, as the driver published it; ``target`` and ``markers``: as the driver published them;
    ``notes``: what the page cannot show, said on it; ``start``: where the time axis starts (default: the
    earliest time known).
    """
    histories: dict[int, list[Move]] = {k: list(v) for k, v in (gone or {}).items()}
    for pod in pods:
        raw = ((pod.get("metadata") or {}).get("labels") or {}).get(SPARK_EXECUTOR_ID_LABEL)
        if raw is None or not str(raw).isdigit():
            continue
        histories[int(raw)] = pod_moves(pod)
    registered = {int(k): v for k, v in (registered_at or {}).items() if k.isdigit()}
    timeline = from_histories(
        title, histories, now=now, start=start, registered_at=registered, target=target, markers=markers
    )
    return attrs.evolve(timeline, notes=tuple(notes))


class TimelineLog:
    """What the backend notes for the timeline besides executor histories: target changes, markers
    and the time each executor registered with the driver. Bounded, not thread-safe (its owner locks)."""

    def __init__(self, *, started_at: float, limit: int = 10_000) -> None:
        self._started_at = started_at
        self._limit = limit
        self._target: list[tuple[float, int]] = []
        self._markers: list[Marker] = []
        self._registered: dict[int, float] = {}

    def target(self, when: float, total: int) -> None:
        if not self._target or self._target[-1][1] != total:
            self._target.append((when, total))
            del self._target[: -self._limit]

    def marker(self, when: float, kind: str, text: str) -> None:
        self._markers.append(Marker(when, kind, text))
        del self._markers[: -self._limit]

    def registered(self, executor_ids: Iterable[int], when: float) -> None:
        for executor_id in executor_ids:
            self._registered.setdefault(executor_id, when)

    @property
    def started_at(self) -> float:
        return self._started_at

    def recent(self, count: int) -> tuple[list[tuple[float, int]], list[Marker]]:
        """The last ``count`` target changes and markers (what a driver publishes for the CLI)."""
        return self._target[-count:], self._markers[-count:]

    def build(self, title: str, histories: Mapping[int, Sequence[Move]], *, now: float) -> Timeline:
        return from_histories(
            title,
            histories,
            now=now,
            start=self._started_at,
            registered_at=self._registered,
            target=self._target,
            markers=self._markers,
        )
