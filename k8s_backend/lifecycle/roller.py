"""Executor rolling (Spark's ExecutorRollPlugin under ``pyk8s://``): every ``rollInterval`` one executor
is decommissioned, so that long applications get fresh executors.

Each interval the roller reads the driver's executor summaries, asks the pure
:func:`~k8s_backend.lifecycle.roll_decision.decide_roll`, and acts on a roll the way the backend's other
decommissions do: the executor events are told (its end is no failure), its pod gets the decommission
label (if configured), and the driver decommissions it through Spark's graceful path with the executor
target kept, so the allocator replaces it once it is gone. Every roll and skip is logged and kept for
status().
"""

from __future__ import annotations

import collections
import datetime
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from k8s_backend.common import Clock, Scheduler
from k8s_backend.common.scheduler import Cancellable
from k8s_backend.lifecycle.driver_port import DriverEndpoint
from k8s_backend.lifecycle.executor_events import NO_EVENTS, ExecutorEvents
from k8s_backend.lifecycle.roll_decision import RollDecision, decide_roll, policy_name
from k8s_backend.lifecycle.roll_policy import PolicyHook, RollPolicy

log = logging.getLogger(__name__)


@attrs.frozen
class RollSettings:
    """``spark.kubernetes.executor.rollInterval`` (seconds), the policy and the minimum task count."""

    interval: float
    policy: RollPolicy | PolicyHook
    min_tasks: int = 0


@attrs.frozen
class RollRecord:
    """One interval's outcome, for status()."""

    time: float
    decision: RollDecision


class ExecutorRoller:
    """Rolls one executor per interval on the injected scheduler (at a fixed delay of ``interval`` after
    each look, which the interval's length makes the same as Spark's fixed rate)."""

    def __init__(
        self,
        scheduler: Scheduler,
        clock: Clock,
        *,
        settings: RollSettings,
        driver: DriverEndpoint,
        target: Callable[[], int],
        departing: Callable[[], frozenset[int]] | None = None,
        events: ExecutorEvents = NO_EVENTS,
        label: Callable[[Sequence[str]], None] | None = None,
        recent: int = 20,
    ) -> None:
        """``target``: the executor count asked for now; ``departing``: executors decommissioned on a
        disruption notice (not rolled meanwhile); ``label``: puts the decommission label on pods."""
        self._scheduler = scheduler
        self._clock = clock
        self.settings = settings
        self._driver = driver
        self._target = target
        self._departing = departing
        self._events = events
        self._label = label
        self._lock = threading.Lock()
        self._rolled: frozenset[str] = frozenset()  # rolled, maybe still decommissioning
        self._task: Cancellable | None = None
        self.rolls: collections.deque[RollRecord] = collections.deque(maxlen=recent)
        self.skips: collections.deque[RollRecord] = collections.deque(maxlen=recent)
        self.total_rolls = 0

    def start(self) -> None:
        interval = self.settings.interval
        log.info(
            "Rolling one executor every %gs (policy %s, at least %d tasks run)",
            interval,
            policy_name(self.settings.policy),
            self.settings.min_tasks,
        )
        self._task = self._scheduler.schedule_with_fixed_delay(interval, interval, self._tick)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _tick(self) -> None:
        self.roll_once()

    def roll_once(self) -> RollDecision:
        """One interval: decide on the driver's summaries and act (the scheduled task; tests call it)."""
        summaries = self._driver.executor_summaries()
        departing = frozenset(str(i) for i in (self._departing() if self._departing else ()))
        with self._lock:
            if summaries:  # rolled executors are forgotten once gone (not when the list could not be read)
                self._rolled &= {s.id for s in summaries}
            rolled = self._rolled
        decision = decide_roll(
            summaries,
            self.settings.policy,
            min_tasks=self.settings.min_tasks,
            target=self._target(),
            departing=rolled | departing,
        )
        record = RollRecord(self._clock.now(), decision)
        if decision.executor_id is None:
            log.info("Not rolling an executor: %s", decision.reason)
            self.skips.append(record)
            return decision
        self._roll(decision.executor_id, decision.reason)
        self.rolls.append(record)
        return decision

    def _roll(self, executor_id: str, why: str) -> None:
        with self._lock:
            self._rolled |= {executor_id}
            self.total_rolls += 1
        policy = policy_name(self.settings.policy)
        log.info(
            "Rolling executor %s (policy %s: %s): decommissioning it; a replacement follows",
            executor_id,
            policy,
            why,
        )
        self._events.decommissioning([executor_id])
        if self._label is not None:
            self._label([executor_id])
        now = datetime.datetime.fromtimestamp(self._clock.now(), datetime.timezone.utc).isoformat()
        try:  # Spark's own reason text, so the driver's log reads as under Spark's plugin
            self._driver.decommission_executor(executor_id, f"Rolling via {policy} at {now}")
        except Exception:
            log.exception("Could not ask the driver to decommission executor %s", executor_id)

    def status(self) -> dict[str, Any]:
        """What status()["roller"] shows: the settings, the rolls and the recent skips."""
        with self._lock:
            rolling = sorted(self._rolled)
        return {
            "interval": self.settings.interval,
            "policy": policy_name(self.settings.policy),
            "min_tasks": self.settings.min_tasks,
            "rolls": self.total_rolls,
            "decommissioning": rolling,
            "recent_rolls": [_record(r) for r in tuple(self.rolls)],
            "recent_skips": [_record(r) for r in tuple(self.skips)],
        }


def _record(record: RollRecord) -> dict[str, Any]:
    return {"time": record.time, "executor_id": record.decision.executor_id, "reason": record.decision.reason}
