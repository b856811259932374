"""The allocator's pace: how many pods a round may create, how many in flight, and when.

With fixed batches (the default) this is Spark's: ``batch.size`` a round, one create at a time, a round
every ``batch.delay``. With ``spark.kubernetes.allocation.batch.adaptive`` it holds the
:mod:`k8s_backend.allocation.adaptive` state between rounds: the decisions are that module's pure
functions, and this class only keeps their latest result (thread-safe, for :meth:`status`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
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
from k8s_backend.common import Cancellable, Scheduler

FOLLOW_UP = 0.02
"""Seconds before the round that follows a round that went well (adaptive batches only): long enough
for the watch to deliver the pods just created, far shorter than ``batch.delay``."""


def outcome_of(results: Sequence[CreateResult], finished_at: float, concurrency: int = 0) -> RoundOutcome:
    """Sum up one round's create results for the sizing (``concurrency``: creates it allowed in flight)."""
    throttled = server_errors = timeouts = succeeded = flow_controlled = 0
    retry_after: float | None = None
    for result in results:
        creation = result.creation
        if creation.created:
            succeeded += 1
        elif creation.retryable:
            if creation.status == 429:
                throttled += 1
                flow_controlled += creation.flow_control is not None
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
        flow_controlled=flow_controlled,
        concurrency=concurrency,
    )


class BatchPacer:
    """Fixed batches, or the adaptive state (``adaptive`` not None).

    ``early_round``: the scheduler and the call that runs a round off schedule (the store's
    delivery to the allocator alone); without it every round waits for the store's next regular delivery.
    """

    def __init__(
        self,
        adaptive: AdaptiveSettings | None,
        *,
        batch_size: int,
        concurrency: int,
        batch_delay: float = 1.0,
        early_round: tuple[Scheduler, Callable[[], None]] | None = None,
    ) -> None:
        self._adaptive = adaptive
        self._batch_delay = batch_delay
        self._early_round = early_round
        self._follow_up: Cancellable | None = None
        self._halted = False
        self._last_creates = float("-inf")  # when the last round that sent creates ended
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

    def record(self, results: Sequence[CreateResult], now: float, concurrency: int = 0) -> None:
        """Feed one round's create results to the sizing (fixed batches: only count the 429s)."""
        if not results:
            return
        outcome = outcome_of(results, now, concurrency)
        with self._lock:
            self._last_creates = now
            self.throttled += outcome.throttled
            if self._adaptive is None or self._state is None:
                return
            self._state = after_round(self._state, self._adaptive, outcome)

    def after_round(
        self, results: Sequence[CreateResult], pace: BatchDecision, *, missing: int, now: float
    ) -> None:
        """Adaptive batches: record the round, then schedule the next one early when pods are still
        ``missing``: at once after a round that went well (as soon as the watch can have delivered the new
        pods), not a whole batch delay later; when a Retry-After shorter than the delay passes. Early rounds
        stop once no create was sent for a whole batch delay."""
        self.record(results, now, pace.concurrency)
        if missing <= 0 or self._early_round is None:
            return
        with self._lock:
            if now - self._last_creates >= self._batch_delay:
                # Nothing created for a whole delay (the pods are not seen yet, or a limit holds them
                # back): the regular rounds are soon enough.
                return
        if not pace.may_create:
            delay = pace.wait
        elif self.fast:
            delay = FOLLOW_UP
        else:
            return
        if delay >= self._batch_delay:
            return  # the regular round comes first
        scheduler, run_round = self._early_round
        with self._lock:
            if self._halted or self._follow_up is not None:
                return
            self._follow_up = scheduler.schedule(delay, lambda: self._run_early(run_round))

    def _run_early(self, run_round: Callable[[], None]) -> None:
        with self._lock:
            self._follow_up = None
            if self._halted:
                return
        run_round()

    def halt(self) -> None:
        """No early round from now on."""
        with self._lock:
            self._halted = True
            follow_up, self._follow_up = self._follow_up, None
        if follow_up is not None:
            follow_up.cancel()

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
                "concurrency_cap": state.concurrency_cap,
                "throttled": self.throttled,
            }
