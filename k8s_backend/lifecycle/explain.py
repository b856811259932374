"""Human explanations of why an executor pod ended, for the driver's logs and UI."""

from __future__ import annotations

from typing import Any

from k8s_backend.kube.port import Obj

UNKNOWN_EXIT_CODE = -1

_EXIT_CODES: dict[int, str] = {
    0: "(success)",
    1: "(generic, look at logs to clarify)",
    10: "(Uncaught exception)",
    11: "(too many executor failures)",
    42: "(Douglas Adams fan)",
    50: "(Uncaught exception)",
    52: "(JVM OOM)",
    53: "(DiskStore failed to create temp dir)",
    126: "(not executable - possibly perm or arch)",
    137: "(SIGKILL, possible container OOM)",
    139: "(SIGSEGV: that's unexpected)",
    143: "(SIGTERM: the executor was asked to stop)",
    255: "(exit-1, your guess is as good as mine)",
}


def describe_exit_code(code: int) -> str:
    """``"137 (SIGKILL, possible container OOM)"``: the code with what it usually means."""
    return f"{code} {_EXIT_CODES.get(code, '(unexpected)')}"


def container_statuses(pod: Obj) -> list[dict[str, Any]]:
    statuses: list[dict[str, Any]] = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses


def spark_container_status(pod: Obj, container_name: str) -> dict[str, Any] | None:
    for status in container_statuses(pod):
        if status.get("name") == container_name:
            return status
    return None


def exit_code_of(pod: Obj, container_name: str) -> int:
    """The Spark container's exit code; another container's only when the Spark one has none.

    Spark takes the first terminated container, so a sidecar that exited 0 could mask an executor crash.
    """
    preferred = spark_container_status(pod, container_name)
    candidates = [preferred] if preferred else []
    candidates += container_statuses(pod)
    for status in candidates:
        terminated = ((status or {}).get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return UNKNOWN_EXIT_CODE


def termination_reason(pod: Obj, container_name: str) -> str:
    status = spark_container_status(pod, container_name) or {}
    terminated = (status.get("state") or {}).get("terminated") or {}
    return str(terminated.get("reason") or "")


def _memory_limit(pod: Obj, container_name: str) -> str:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == container_name:
            return str(((container.get("resources") or {}).get("limits") or {}).get("memory") or "")
    return ""


def eviction_message(pod: Obj) -> str | None:
    """The kubelet's message when it evicted the pod (node pressure, ephemeral storage), else None.

    An evicted pod often has no terminated container, so its exit code says nothing (-1).
    """
    status = pod.get("status") or {}
    if status.get("reason") != "Evicted":
        return None
    return str(status.get("message") or "").strip()


def headline(pod: Obj, executor_id: int, exit_code: int, container_name: str) -> str:
    """One line that says what most likely happened, before the details."""
    evicted = eviction_message(pod)
    if evicted is not None:
        because = f": {evicted.rstrip('.')}" if evicted else ""
        return f"Evicted by the kubelet{because}"
    reason = termination_reason(pod, container_name)
    if reason == "OOMKilled":
        limit = _memory_limit(pod, container_name)
        limit_text = f" of {limit}" if limit else ""
        return (
            f"OOMKilled: the executor exceeded its memory limit{limit_text}; raise spark.executor.memory "
            "or spark.executor.memoryOverhead"
        )
    if exit_code == 137:
        return "The executor was killed with SIGKILL (exit 137), possibly for exceeding its memory limit"
    if exit_code == 52:
        return "The executor JVM ran out of heap (exit 52); raise spark.executor.memory"
    return f"The executor with id {executor_id} exited with code {describe_exit_code(exit_code)}"


def _describe_container(status: dict[str, Any]) -> str:
    state = status.get("state") or {}
    lines = [f"\t container name: {status.get('name')}", f"\t container image: {status.get('image')}"]
    if state.get("running"):
        lines += [
            "\t container state: running",
            f"\t container started at: {state['running'].get('startedAt')}",
        ]
    elif state.get("waiting"):
        lines += ["\t container state: waiting", f"\t pending reason: {state['waiting'].get('reason')}"]
    elif state.get("terminated"):
        term = state["terminated"]
        lines += [
            "\t container state: terminated",
            f"\t container started at: {term.get('startedAt')}",
            f"\t container finished at: {term.get('finishedAt')}",
            f"\t exit code: {term.get('exitCode')}",
            f"\t termination reason: {term.get('reason')}",
        ]
    else:
        lines.append("\t container state: N/A")
    return "\n".join(lines)


def exit_message(pod: Obj, executor_id: int, exit_code: int, container_name: str) -> str:
    """Spark's loss message for a finished pod, led by our one-line explanation."""
    status = pod.get("status") or {}
    containers = "\n\n".join(_describe_container(s) for s in container_statuses(pod))
    return (
        f"{headline(pod, executor_id, exit_code, container_name)}.\n"
        f"The executor with id {executor_id} exited with exit code {describe_exit_code(exit_code)}.\n"
        f"The API gave the following brief reason: {status.get('reason') or ''}\n"
        f"The API gave the following message: {status.get('message') or ''}\n\n"
        f"The API gave the following container statuses:\n\n{containers}\n"
    )


def deleted_message(executor_id: int) -> str:
    return f"The executor with id {executor_id} was deleted by a user or the framework."


def missing_message(executor_id: int, registered_at_ms: int, polled_at_ms: int, delta_ms: int) -> str:
    return (
        f"The executor with ID {executor_id} (registered at {registered_at_ms} ms) was not found in the "
        f"cluster at the polling time ({polled_at_ms} ms) which is after the accepted detect delta time "
        f"({delta_ms} ms) configured by `spark.kubernetes.executor.missingPodDetectDelta`. The executor may "
        "have been deleted but the driver missed the deletion event. Marking this executor as failed."
    )
