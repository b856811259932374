"""Tracks every executor the backend asked for through explicit states, with a timed history.

Pure bookkeeping (no I/O): snapshot batches and driver hooks raise events; the tracker moves each
executor's :class:`~k8s_backend.common.state_machine.StateMachine` along :data:`EXECUTOR_TRANSITIONS`
(times come with the events) and returns notices (stuck, image cannot be pulled) for the backend to act on. An
illegal transition is logged with the executor id and both states, never applied.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import attrs

from k8s_backend.common.state_machine import StateMachine, Transition
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase
from k8s_backend.tracking.pod_reasons import PendingReason, container_image, pending_reason
from k8s_backend.tracking.states import EXECUTOR_TRANSITIONS, POD_PHASE_TO_STATE, ExecutorState
from k8s_backend.tracking.times import iso_time

log = logging.getLogger(__name__)

BACK_OFF = "ImagePullBackOff"


@attrs.define
class ExecutorRecord:
    """One executor: its state machine (state and timed history) and what it is waiting for."""

    executor_id: int
    resource_profile_id: int
    machine: StateMachine[ExecutorState]
    pending_reason: PendingReason | None = None
    pending_since: float | None = None
    reported_reason: PendingReason | None = None
    pull_failing_since: float | None = None
    image: str = ""

    @property
    def state(self) -> ExecutorState:
        return self.machine.state

    @property
    def history(self) -> list[Transition[ExecutorState]]:
        """A copy, oldest first; the first entry is the request (``requested`` to ``requested``)."""
        return self.machine.history()


@attrs.frozen
class ExecutorStuck:
    """An executor has been pending for longer than the stuck timeout, for this reason."""

    executor_id: int
    reason: PendingReason
    pending_for: float


@attrs.frozen
class ImagePullFailed:
    """An executor's image could not be pulled for long enough, and no executor of its profile ever ran."""

    executor_id: int
    image: str
    reason: PendingReason
    failing_for: float


TrackerNotice = ExecutorStuck | ImagePullFailed


class ExecutorTracker:
    """Executor id -> state machine with history; surfaces stuck executors and unpullable images."""

    def __init__(
        self,
        *,
        container_name: str,
        stuck_timeout: float = 60.0,
        image_pull_timeout: float | None = 120.0,
        history_limit: int = 50,
        max_finished: int = 10_000,
    ) -> None:
        self._container_name = container_name
        self._stuck_timeout = stuck_timeout
        self._image_pull_timeout = image_pull_timeout
        self._history_limit = history_limit
        self._max_finished = max_finished
        self._records: dict[int, ExecutorRecord] = {}
        self._pending: set[int] = set()
        self._finished: list[int] = []
        self._profiles_that_ran: set[int] = set()
        self.illegal_transitions = 0

    # -- events --------------------------------------------------------------------------------------

    def requested(self, executor_id: int, resource_profile_id: int, now: float, reason: str = "") -> None:
        """A pod was created for this executor; ``reason`` says why the allocator decided it (kept as the
        first entry of its history, so a run can be explained afterwards). The watch may show the pod before
        its create returns: the reason then completes the record that event made."""
        if executor_id in self._records:
            if reason:
                self._records[executor_id].machine.explain_start(reason)
            return
        machine = StateMachine(
            f"executor {executor_id}",
            ExecutorState.REQUESTED,
            EXECUTOR_TRANSITIONS,
            history_limit=self._history_limit,
            started_at=now,
            started_reason=reason,
            keep_first=True,
        )
        record = ExecutorRecord(executor_id, resource_profile_id, machine)
        record.pending_since = now
        self._records[executor_id] = record
        self._pending.add(executor_id)

    def killed(self, executor_ids: Iterable[int], now: float) -> None:
        for executor_id in executor_ids:
            self._move(executor_id, ExecutorState.TERMINATING, now, "killed by the driver")

    def decommissioning(self, executor_ids: Iterable[int], now: float) -> None:
        for executor_id in executor_ids:
            self._move(executor_id, ExecutorState.DECOMMISSIONING, now, "decommission requested")

    def lost(self, executor_id: int, detail: str, now: float) -> None:
        self._move(executor_id, ExecutorState.LOST, now, detail)

    def removed(self, executor_id: int, detail: str, now: float) -> None:
        """The driver was told the executor is gone: lost, unless its pod already ended."""
        record = self._records.get(executor_id)
        if record is not None and not record.state.is_final:
            self._move(executor_id, ExecutorState.LOST, now, detail)

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str, now: float) -> None:
        """The pod could not even be created (e.g. quota exceeded): record why."""
        self.requested(executor_id, resource_profile_id, now)
        record = self._records[executor_id]
        record.pending_reason = PendingReason("CreateFailed", detail)
        self._move(executor_id, ExecutorState.FAILED, now, f"pod creation failed: {detail}")

    def on_batch(self, batch: SnapshotBatch, now: float) -> list[TrackerNotice]:
        """Apply the batch's pod changes, then report stuck executors and unpullable images."""
        if batch.first or batch.resynced:
            for known in batch.snapshot.pods.values():
                if known.executor_id not in self._records:
                    self._on_pod(known, now)
        for state in batch.updates:
            self._on_pod(state, now)
        return self._check_pending(now)

    def _on_pod(self, pod_state: ExecutorPodState, now: float) -> None:
        executor_id = pod_state.executor_id
        if executor_id not in self._records:
            self.requested(executor_id, pod_state.resource_profile_id, now)  # its create explains it, if ours
        record = self._records[executor_id]
        record.image = record.image or container_image(pod_state.pod, self._container_name)
        phase = pod_state.phase
        if phase is PodPhase.RUNNING and pod_state.is_being_deleted:
            target = ExecutorState.TERMINATING
        else:
            mapped = POD_PHASE_TO_STATE.get(phase)
            if mapped is None:
                return
            target = mapped
        if target is ExecutorState.PENDING:
            reason = pending_reason(pod_state.pod)
            if reason is None or not (reason.same_as(record.pending_reason) and reason.reason == BACK_OFF):
                record.pending_reason = reason  # a back-off keeps the pull error's message (the cause)
            if reason is None or not reason.is_image_pull_failure:
                record.pull_failing_since = None
            elif record.pull_failing_since is None:
                record.pull_failing_since = now
        detail = ""
        if target in (ExecutorState.FAILED, ExecutorState.SUCCEEDED):
            detail = _end_detail(pod_state.pod, self._container_name)
        if target is ExecutorState.RUNNING:
            self._profiles_that_ran.add(record.resource_profile_id)
        if target in (ExecutorState.PENDING, ExecutorState.RUNNING) and record.state in (
            ExecutorState.DECOMMISSIONING,
            ExecutorState.TERMINATING,
        ):
            return  # the pod still runs after the driver asked it to go: an observation, not a move
        if target is not record.state:
            self._move(executor_id, target, now, detail)

    def _move(self, executor_id: int, target: ExecutorState, now: float, detail: str = "") -> None:
        record = self._records.get(executor_id)
        if record is None or record.state is target:
            return
        source = record.state
        # Keep why it waited in the history line of the pending step.
        waited = ""
        if source is ExecutorState.PENDING and record.pending_reason is not None:
            waited = str(record.pending_reason)
        if not record.machine.transition_if_allowed(target, detail, at=now, stay_reason=waited):
            self.illegal_transitions += 1
            log.warning(
                "Executor %d: ignoring illegal transition from %s to %s%s",
                executor_id,
                source.value,
                target.value,
                f" ({detail})" if detail else "",
            )
            return
        if target not in (ExecutorState.REQUESTED, ExecutorState.PENDING):
            self._pending.discard(executor_id)
        if target.is_final:
            self._finished.append(executor_id)
            self._prune()

    def _prune(self) -> None:
        while len(self._finished) > self._max_finished:
            self._records.pop(self._finished.pop(0), None)

    def _check_pending(self, now: float) -> list[TrackerNotice]:
        notices: list[TrackerNotice] = []
        for executor_id in self._pending:  # pending executors only: cheap at any scale
            record = self._records[executor_id]
            reason = record.pending_reason
            since = record.pending_since if record.pending_since is not None else now
            waited = now - since
            if reason is None or waited < self._stuck_timeout or reason.same_as(record.reported_reason):
                pass
            else:
                record.reported_reason = reason
                log.warning("Executor %d has been pending for %.0fs: %s", executor_id, waited, reason)
                notices.append(ExecutorStuck(executor_id, reason, waited))
            if (
                reason is not None
                and reason.is_image_pull_failure
                and self._image_pull_timeout is not None
                and record.pull_failing_since is not None
                and now - record.pull_failing_since >= self._image_pull_timeout
                and record.resource_profile_id not in self._profiles_that_ran
            ):
                failing_for = now - record.pull_failing_since
                notices.append(ImagePullFailed(executor_id, record.image, reason, failing_for))
        return notices

    # -- views ---------------------------------------------------------------------------------------

    def record(self, executor_id: int) -> ExecutorRecord | None:
        return self._records.get(executor_id)

    def histories(self) -> dict[int, list[Transition[ExecutorState]]]:
        """Every tracked executor's history (oldest first), by executor id."""
        return {executor_id: record.history for executor_id, record in self._records.items()}

    def describe(self, executor_id: int) -> str:
        """The history on one line, times in ISO 8601 (:func:`k8s_backend.tracking.times.iso_time`):
        ``requested 2026-12-02T12:00:01.000Z, pending 2026-12-02T12:00:02.000Z (Unschedulable: ...), ...``."""
        record = self._records.get(executor_id)
        if record is None:
            return f"executor {executor_id}: unknown"
        parts = []
        for entry in record.history:
            text = f"{entry.target.value} {iso_time(entry.time)}"
            if entry.reason:
                text += f" ({entry.reason})" if entry.target is ExecutorState.PENDING else f" {entry.reason}"
            parts.append(text)
        if record.state in (ExecutorState.REQUESTED, ExecutorState.PENDING) and record.pending_reason:
            parts[-1] += f" ({record.pending_reason})" if "(" not in parts[-1] else ""
        return ", ".join(parts)

    def stuck(self, now: float, min_wait: float | None = None) -> list[dict[str, object]]:
        wait = self._stuck_timeout if min_wait is None else min_wait
        out: list[dict[str, object]] = []
        for executor_id in sorted(self._pending):
            record = self._records[executor_id]
            since = record.pending_since if record.pending_since is not None else now
            if record.pending_reason is not None and now - since >= wait:
                out.append(
                    {
                        "executor_id": executor_id,
                        "reason": str(record.pending_reason),
                        "pending_for": now - since,
                    }
                )
        return out

    def counts(self) -> dict[ExecutorState, int]:
        """Executors known per state (finished ones up to ``max_finished``)."""
        counts: dict[ExecutorState, int] = {}
        for record in self._records.values():
            counts[record.state] = counts.get(record.state, 0) + 1
        return counts

    def waiting_reasons(self) -> list[PendingReason]:
        """Why the executors not running yet wait, one entry per executor that has a reason."""
        reasons = (self._records[i].pending_reason for i in sorted(self._pending))
        return [reason for reason in reasons if reason is not None]

    def summary(self, now: float, *, histories: int = 20) -> dict[str, object]:
        counts: dict[str, int] = {}
        for record in self._records.values():
            counts[record.state.value] = counts.get(record.state.value, 0) + 1
        recent = sorted(self._records)[-histories:]
        return {
            "counts": counts,
            "stuck": self.stuck(now),
            "histories": {str(i): self.describe(i) for i in recent},
            "illegal_transitions": self.illegal_transitions,
        }


def _end_detail(pod: Obj, container_name: str) -> str:
    """How a pod ended, for its history line: ``exit 137 OOMKilled``, ``Evicted (exit 137)``."""
    code = explain.exit_code_of(pod, container_name)
    if explain.eviction_message(pod) is not None:
        return "Evicted" if code == explain.UNKNOWN_EXIT_CODE else f"Evicted (exit {code})"
    why = explain.termination_reason(pod, container_name)
    return f"exit {code}" + (f" {why}" if why and why not in ("Error", "Completed") else "")
