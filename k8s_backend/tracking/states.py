"""Executor states and the transitions allowed between them, in one table."""

from __future__ import annotations

import enum

from k8s_backend.snapshots.states import PodPhase


class ExecutorState(enum.Enum):
    REQUESTED = "requested"
    PENDING = "pending"
    RUNNING = "running"
    DECOMMISSIONING = "decommissioning"
    TERMINATING = "terminating"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    LOST = "lost"
    DELETED = "deleted"

    @property
    def is_final(self) -> bool:
        return self in (
            ExecutorState.SUCCEEDED,
            ExecutorState.FAILED,
            ExecutorState.LOST,
            ExecutorState.DELETED,
        )


_S = ExecutorState
_ENDINGS = frozenset({_S.SUCCEEDED, _S.FAILED, _S.LOST, _S.DELETED})

EXECUTOR_TRANSITIONS: dict[ExecutorState, frozenset[ExecutorState]] = {
    _S.REQUESTED: _ENDINGS | {_S.PENDING, _S.RUNNING, _S.TERMINATING, _S.DECOMMISSIONING},
    _S.PENDING: _ENDINGS | {_S.RUNNING, _S.TERMINATING, _S.DECOMMISSIONING},
    _S.RUNNING: _ENDINGS | {_S.DECOMMISSIONING, _S.TERMINATING},
    _S.DECOMMISSIONING: _ENDINGS | {_S.TERMINATING},
    _S.TERMINATING: _ENDINGS,
    _S.SUCCEEDED: frozenset({_S.DELETED}),
    _S.FAILED: frozenset({_S.DELETED}),
    _S.LOST: frozenset({_S.DELETED, _S.FAILED, _S.SUCCEEDED}),
    _S.DELETED: frozenset(),
}

POD_PHASE_TO_STATE: dict[PodPhase, ExecutorState] = {
    PodPhase.PENDING: _S.PENDING,
    PodPhase.RUNNING: _S.RUNNING,
    PodPhase.SUCCEEDED: _S.SUCCEEDED,
    PodPhase.FAILED: _S.FAILED,
    PodPhase.DELETED: _S.DELETED,
    PodPhase.TERMINATING: _S.TERMINATING,
}
