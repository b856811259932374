"""The small mechanisms every part shares: injected time and scheduled executors (with deterministic doubles),
the explicit state machine, the ordered stop sequence, the failure sink and process signals."""

from k8s_backend.common.clock import Clock, ManualClock, SystemClock
from k8s_backend.common.scheduler import (
    Cancellable,
    DeterministicScheduler,
    Scheduler,
    ThreadScheduler,
)

__all__ = [
    "Cancellable",
    "Clock",
    "DeterministicScheduler",
    "ManualClock",
    "Scheduler",
    "SystemClock",
    "ThreadScheduler",
]
