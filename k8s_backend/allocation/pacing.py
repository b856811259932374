"""The allocator's pace: how many pods a round may create, how many in flight, and when.

With fixed batches (the default) this is Spark's: ``batch.size`` a round, one create at a time, a round
every ``batch.delay``. With ``spark.kubernetes.allocation.batch.adaptive`` it holds the
:mod:`k8s_backend.allocation.adaptive` state between rounds: the decisions are that module's pure
functions, and this class only keeps their latest result (thread-safe, for :meth:`status`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from k8s_backend.allocation.adaptive import (
    AdaptiveSettings,
    AdaptiveState,
    BatchDecision,
    RoundOutcome,
    after_round,
    decide,
    initial_state,
)
from k8s_backend.allocation.create_batch import CreateResult

FOLLOW_UP = 0.02
"""Seconds before the round that follows a round that went well (adaptive batches only): long enough
for the watch to deliver the pods just created, far shorter than ``batch.delay``."""


def outcome_of(results: Sequence[CreateResult], finished_at: float) -> RoundOutcome:
    """Sum up one round's create results for the sizing."""
    throttled = server_errors = timeouts = succeeded = 0
    retry_after: float | None = None
    for result in results:
        creation = result.creation
        if creation.created:
            succeeded += 1
        elif creation.retryable:
            if creation.status == 429:
                throttled += 1
            elif creation.status >= 500:
                server_errors += 1
            else:
                timeouts += 1
            if creation.retry_after is not None:
                retry_after = max(retry_after or 0.0, creation.retry_after)
    return RoundOutcome(
        finished_at=finished_at,
        attempted=len(results),
        succeeded=succeeded,
        throttled=throttled,
        server_errors=server_errors,
        timeouts=timeouts,
        retry_after=retry_after,
        latencies=tuple(r.latency for r in results),
    )


class BatchPacer:
    """Fixed batches, or the adaptive state (``adaptive`` not None)."""

    def __init__(self, adaptive: AdaptiveSettings | None, *, batch_size: int, concurrency: int) -> None:
        self._adaptive = adaptive
        self._fixed = BatchDecision(
            size=batch_size, concurrency=max(1, concurrency), may_create=True, wait=0.0
        )
        self._lock = threading.Lock()
        self._state: AdaptiveState | None = None if adaptive is None else initial_state(adaptive)
        self.throttled = 0  # creates answered 429, over the allocator's life (status)

    @property
    def adaptive(self) -> bool:
        return self._adaptive is not None

    def decision(self, now: float) -> BatchDecision:
        """The next round's size, concurrency and whether it may create now."""
        with self._lock:
            if self._adaptive is None or self._state is None:
                return self._fixed
            return decide(self._state, self._adaptive, now)

    def record(self, results: Sequence[CreateResult], now: float) -> None:
        """Feed one round's create results to the sizing (nothing to do with fixed batches)."""
        if not results:
            return
        outcome = outcome_of(results, now)
        with self._lock:
            self.throttled += outcome.throttled
            if self._adaptive is None or self._state is None:
                return
            self._state = after_round(self._state, self._adaptive, outcome)

    @property
    def fast(self) -> bool:
        """Adaptive batches whose last round went well: the next round need not wait out the delay."""
        with self._lock:
            return self._state is not None and self._state.fast

    def status(self) -> dict[str, Any]:
        with self._lock:
            state = self._state
            if state is None:
                return {"adaptive": False, "batch": self._fixed.size, "throttled": self.throttled}
            return {
                "adaptive": True,
                "batch": state.batch,
                "threshold": state.threshold,
                "backoffs": state.backoffs,
                "usual_create_latency": state.usual_latency,
                "throttled": self.throttled,
            }
