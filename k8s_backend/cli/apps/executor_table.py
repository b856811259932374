"""``k8s-backend status``'s per-executor rows, as a table (``-o wide`` adds columns) or as JSON.

A row says where each executor is: its id and pod, the node, the phase (``Terminating`` while a
deletion is under way), whether it is registered with the driver (``Running`` only says its pod runs;
known through the driver's heartbeat Lease or its pod, see :mod:`k8s_backend.cli.apps.registrations`),
its age, the last reason it gave (why it is Pending, why it ended) and, once ended, its exit code with
what that code usually means.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from k8s_backend.cli.apps.applications import Application, age, name_of, phase_of
from k8s_backend.kube.labels import SPARK_EXECUTOR_ID_LABEL
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.report.builders import executor_line, pod_moves
from k8s_backend.tracking.pod_reasons import pending_reason
from k8s_backend.tracking.times import iso_time

EXECUTOR_CONTAINER = "spark-kubernetes-executor"
OUTPUTS = ("table", "wide", "json")


@attrs.frozen
class ExecutorRow:
    """One executor pod, as ``status`` shows it."""

    executor_id: str
    pod: str
    node: str
    phase: str
    created: str  # RFC 3339, as the API server wrote it
    age: str
    reason: str
    exit_code: int | None
    explanation: str
    ip: str
    restarts: int
    registered: bool | None = None  # None: the driver's registrations are not known here
    registered_at: str = ""  # RFC 3339
    history: tuple[dict[str, Any], ...] = ()  # its states, oldest first: {state, from, to, reason}

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.executor_id,
            "pod": self.pod,
            "node": self.node or None,
            "phase": self.phase,
            "registered": self.registered,
            "registeredAt": self.registered_at or None,
            "created": self.created or None,
            "reason": self.reason or None,
            "exitCode": self.exit_code,
            "explanation": self.explanation or None,
            "podIP": self.ip or None,
            "restarts": self.restarts,
            "history": list(self.history),
        }


def _container_name(pod: Obj) -> str:
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    return EXECUTOR_CONTAINER if EXECUTOR_CONTAINER in names or not names else names[0]


def _reason(pod: Obj, container: str, ended: bool) -> str:
    if ended:
        evicted = explain.eviction_message(pod)
        if evicted is not None:
            return f"Evicted: {evicted}" if evicted else "Evicted"
        return explain.termination_reason(pod, container)
    pending = pending_reason(pod)
    return "" if pending is None else str(pending)


def executor_row(pod: Obj, now: float, registered: Mapping[str, float] | None = None) -> ExecutorRow:
    """The row of one executor pod at wall-clock time ``now``; ``registered``: the driver's registered
    executors (id to registration time), None if not known."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    container = _container_name(pod)
    phase = phase_of(pod)
    ended = phase in ("Succeeded", "Failed")
    code = explain.exit_code_of(pod, container) if ended else None
    own = explain.spark_container_status(pod, container) or {}
    executor_id = str((meta.get("labels") or {}).get(SPARK_EXECUTOR_ID_LABEL) or "-")
    registered_at = None if registered is None else registered.get(executor_id)
    return ExecutorRow(
        executor_id=executor_id,
        pod=name_of(pod),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        phase="Terminating" if meta.get("deletionTimestamp") and not ended else phase,
        created=str(meta.get("creationTimestamp") or ""),
        age=age(meta.get("creationTimestamp"), now),
        reason=_reason(pod, container, ended),
        exit_code=None if code is None or code == explain.UNKNOWN_EXIT_CODE else code,
        explanation=explain.headline(pod, 0, code, container) if code is not None and code != 0 else "",
        ip=str(status.get("podIP") or ""),
        restarts=int(own.get("restartCount") or 0),
        registered=None if registered is None else registered_at is not None,
        registered_at="" if registered_at is None else iso_time(registered_at),
        history=_history(executor_id, pod, now, registered_at),
    )


def _history(
    executor_id: str, pod: Obj, now: float, registered_at: float | None
) -> tuple[dict[str, Any], ...]:
    """What the pod's own times (and the driver's registration) tell of the executor's states, in the
    ISO 8601 form of ``status()``'s histories; the current state has no ``to``."""
    spans = executor_line(executor_id, pod_moves(pod), now, registered_at).spans
    return tuple(
        {
            "state": span.kind,
            "from": iso_time(span.start),
            "to": None if span.end >= now and index == len(spans) - 1 else iso_time(span.end),
            "reason": span.detail or None,
        }
        for index, span in enumerate(spans)
    )


def rows_of(app: Application, now: float) -> list[ExecutorRow]:
    """The application's executors, by executor id (numerically)."""
    rows = [executor_row(pod, now, app.registered) for pod in app.executors]
    return sorted(rows, key=_order)


def _order(row: ExecutorRow) -> tuple[bool, int, str]:
    numeric = row.executor_id.isdigit()
    return (not numeric, int(row.executor_id) if numeric else 0, row.pod)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in [headers, *rows]]


def _registered(row: ExecutorRow) -> str:
    return "-" if row.registered is None else ("yes" if row.registered else "no")


def _exit(row: ExecutorRow) -> str:
    if row.exit_code is None:
        return "-"
    return explain.describe_exit_code(row.exit_code)


def table_lines(rows: Sequence[ExecutorRow], *, wide: bool) -> list[str]:
    """The executor table (``wide``: also IP, restarts, when it registered, and the explanation of an
    exit). REGISTERED is ``yes``/``no``, or ``-`` when the driver's registrations are not known."""
    headers = ["ID", "POD", "NODE", "PHASE", "REGISTERED", "AGE", "REASON", "EXIT"]
    if wide:
        headers += ["IP", "RESTARTS", "REGISTERED AT", "EXPLANATION"]
    cells: list[list[str]] = []
    for row in rows:
        reason = row.reason if wide or len(row.reason) <= 100 else row.reason[:97] + "..."
        line = [row.executor_id, row.pod, row.node or "-", row.phase, _registered(row), row.age]
        line += [reason or "-", _exit(row)]
        if wide:
            line += [row.ip or "-", str(row.restarts), row.registered_at or "-", row.explanation or "-"]
        cells.append(line)
    return _table(headers, cells)


def status_json(apps: Sequence[Application], now: float) -> str:
    """Every application with its driver state and executor rows, as one JSON document."""
    documents = []
    for app in apps:
        driver = None
        if app.driver is not None:
            node = (app.driver.get("spec") or {}).get("nodeName")
            driver = {"pod": name_of(app.driver), "phase": phase_of(app.driver), "node": node}
        as_of = app.registered_as_of
        documents.append(
            {
                "applicationId": app.app_id,
                "name": app.app_name,
                "namespace": app.namespace,
                "submissionId": app.submission_id,
                "driver": driver,
                "registeredExecutors": app.registered_count,
                "registrationsAsOf": None if as_of is None else iso_time(as_of),
                "executors": [row.as_json() for row in rows_of(app, now)],
            }
        )
    return json.dumps({"applications": documents}, indent=2, sort_keys=False)
