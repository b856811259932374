"""The backend's own life: new -> starting -> running -> stopping -> stopped, or failed."""

from __future__ import annotations

import enum


class BackendState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"  # the application was failed (e.g. too many executor failures); stop() still cleans up
    STOPPING = "stopping"
    STOPPED = "stopped"


BACKEND_TRANSITIONS: dict[BackendState, frozenset[BackendState]] = {
    BackendState.NEW: frozenset({BackendState.STARTING, BackendState.STOPPING}),
    BackendState.STARTING: frozenset({BackendState.RUNNING, BackendState.FAILED, BackendState.STOPPING}),
    BackendState.RUNNING: frozenset({BackendState.FAILED, BackendState.STOPPING}),
    BackendState.FAILED: frozenset({BackendState.STOPPING}),
    BackendState.STOPPING: frozenset({BackendState.STOPPED}),
    BackendState.STOPPED: frozenset(),
}

# Which hooks may be called in which states.
ACCEPTS_REQUESTS = frozenset({BackendState.STARTING, BackendState.RUNNING})
