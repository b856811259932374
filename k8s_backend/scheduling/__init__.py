"""Injected time and scheduled executors, with deterministic test doubles."""

from k8s_backend.scheduling.clock import Clock, ManualClock, SystemClock
from k8s_backend.scheduling.executor import (
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
