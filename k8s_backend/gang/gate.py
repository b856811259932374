"""The built-in all-or-nothing start, for clusters without a gang scheduler.

The application is held (``sufficient_resources_registered`` stays false) until ``min_executors`` run.
On timeout, Hard fails the application with the reasons executors are stuck; Soft goes on with what runs.
"""

from __future__ import annotations

import enum

import attrs


class GateState(enum.Enum):
    HOLDING = "holding"
    OPEN = "open"
    TIMED_OUT = "timed-out"  # Soft: open anyway; Hard: the application fails


@attrs.frozen
class GangGate:
    min_executors: int
    timeout: float
    hard: bool = False

    def decide(self, running: int, started_at: float, now: float) -> GateState:
        if running >= self.min_executors:
            return GateState.OPEN
        if now - started_at >= self.timeout:
            return GateState.TIMED_OUT
        return GateState.HOLDING

    def failure_reason(self, running: int, waited: float, stuck: list[str]) -> str:
        why = "; ".join(stuck[:5]) if stuck else "no reason reported by Kubernetes"
        return (
            f"Gang scheduling (Hard) timed out: only {running} of {self.min_executors} executors were "
            f"running after {waited:.0f}s (spark.kubernetes.gang.timeout). Pending executors: {why}. "
            "Fix what keeps them pending, or raise spark.kubernetes.gang.timeout, lower "
            "spark.kubernetes.gang.minExecutors, or set spark.kubernetes.gang.style=Soft to go on with the "
            "executors that run"
        )
