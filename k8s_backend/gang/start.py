"""The built-in gang start at run time: holds the application until its gang runs, checked every second.

:class:`k8s_backend.gang.gate.GangGate` decides (a pure function of counts and times); this component
owns what changes: when the gate started, its current state, and the scheduled re-check. It is asked
from the driver's thread (``sufficient_resources_registered``) and re-checks itself on the backend's
scheduler, so both go through one lock and the outcome is acted on once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from k8s_backend.common import Cancellable, Clock, Scheduler
from k8s_backend.common.failure_sink import FailureReporter
from k8s_backend.gang.gate import GangGate, GateState

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0  # seconds between the gate's own re-checks


class GangStart:
    """Runs a :class:`GangGate`: opens when the gang runs; on timeout fails the application (Hard) through
    ``failures`` or goes on (Soft), once."""

    def __init__(
        self,
        gate: GangGate,
        scheduler: Scheduler,
        clock: Clock,
        *,
        running: Callable[[], int],
        stuck_reasons: Callable[[], list[str]],
        failures: FailureReporter,
    ) -> None:
        """``running``: how many executors run now; ``stuck_reasons``: why each pending executor waits."""
        self._gate = gate
        self._scheduler = scheduler
        self._clock = clock
        self._running = running
        self._stuck_reasons = stuck_reasons
        self._failures = failures
        self._lock = threading.Lock()
        self._started = 0.0
        self._state = GateState.HOLDING
        self._task: Cancellable | None = None

    @property
    def gate(self) -> GangGate:
        return self._gate

    @property
    def state(self) -> GateState:
        with self._lock:
            return self._state

    def start(self) -> None:
        """Start the gang timeout now and re-check every second until the gate decides."""
        with self._lock:
            self._started = self._clock.now()
        task = self._scheduler.schedule_with_fixed_delay(CHECK_INTERVAL, CHECK_INTERVAL, self._tick)
        with self._lock:
            self._task = task

    def _tick(self) -> None:
        self.check()

    def check(self) -> GateState:
        """Re-evaluate the all-or-nothing start; act on its outcome the first time it is not HOLDING."""
        running = self._running()
        with self._lock:  # the driver's thread and the scheduler's both check the gate
            if self._state is not GateState.HOLDING:
                return self._state
            now = self._clock.now()
            state = self._gate.decide(running, self._started, now)
            if state is GateState.HOLDING:
                return state
            self._state = state
            task, waited = self._task, now - self._started
        if task is not None:
            task.cancel()
        gate = self._gate
        if state is GateState.OPEN:
            log.info("Gang of %d executors is running", gate.min_executors)
        elif gate.hard:
            # Every pending executor's reason, however short the gang timeout is next to stuckTimeout.
            self._failures.report(gate.failure_reason(running, waited, self._stuck_reasons()))
        else:
            log.warning(
                "Gang timed out (Soft) with %d of %d executors running; going on with them",
                running, gate.min_executors,
            )
        return state

    def status(self) -> dict[str, object]:
        """A plain summary for the backend's status()."""
        return {"min_executors": self._gate.min_executors, "hard": self._gate.hard, "state": self.state.value}
