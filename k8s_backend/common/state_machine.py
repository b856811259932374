"""A small explicit state machine: allowed transitions in one table, every transition recorded.

One mechanism serves the backend's own life (a live clock, an illegal move is an error) and every
executor's (times carried by the events, an illegal move refused and logged by the tracker).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

import attrs

S = TypeVar("S", bound=enum.Enum)


class IllegalTransitionError(RuntimeError):
    """A transition the table does not allow."""


@attrs.frozen
class Transition(Generic[S]):
    """One recorded move. The entry that records the start, if any, has ``source is target``."""

    time: float
    source: S
    target: S
    reason: str = ""


class StateMachine(Generic[S]):
    """Holds one state; moves only along ``transitions``; keeps the history with times and reasons.

    ``now`` is the clock of the transitions that do not say ``at``; without one, every transition must
    say ``at`` (event-driven bookkeeping, where the time travels with the event). ``started_at``
    records the start as the first history entry (with ``started_reason``, why it began); ``keep_first``
    keeps that first entry when the history is trimmed to ``history_limit``, so the history always says
    how it began.
    """

    def __init__(
        self,
        name: str,
        initial: S,
        transitions: Mapping[S, frozenset[S]],
        now: Callable[[], float] | None = None,
        *,
        history_limit: int = 100,
        started_at: float | None = None,
        started_reason: str = "",
        keep_first: bool = False,
    ) -> None:
        if history_limit < (2 if keep_first else 1):
            raise ValueError(f"{name}: history_limit {history_limit} is too small")
        self.name = name
        self._state = initial
        self._transitions = transitions
        self._now = now
        self._history: list[Transition[S]] = []
        self._history_limit = history_limit
        self._keep_first = keep_first
        self._lock = threading.Lock()
        if started_at is not None:
            self._history.append(Transition(started_at, initial, initial, started_reason))

    @property
    def state(self) -> S:
        return self._state

    def can(self, target: S) -> bool:
        return target in self._transitions.get(self._state, frozenset())

    def transition(self, target: S, reason: str = "", *, at: float | None = None) -> Transition[S]:
        """Move to ``target`` or raise :class:`IllegalTransitionError` naming both states."""
        with self._lock:
            if not self.can(target):
                raise IllegalTransitionError(
                    f"{self.name}: cannot go from {self._state.value} to {target.value}"
                    + (f" ({reason})" if reason else "")
                )
            return self._move(target, reason, at, "")

    def transition_if_allowed(
        self, target: S, reason: str = "", *, at: float | None = None, stay_reason: str = ""
    ) -> bool:
        """Move to ``target`` if the table allows it from the current state, atomically; else False.

        ``stay_reason`` explains the stay in the state being left, known only now that it ends (why an
        executor waited): it becomes the reason of that state's entry if the entry has none yet.
        """
        with self._lock:
            if not self.can(target):
                return False
            self._move(target, reason, at, stay_reason)
            return True

    def explain_start(self, reason: str) -> bool:
        """Give the recorded start (``started_at``) its reason, known only later; False if the start entry
        is gone or already has one."""
        with self._lock:
            if not self._history or self._history[0].source is not self._history[0].target:
                return False
            if self._history[0].reason:
                return False
            self._history[0] = attrs.evolve(self._history[0], reason=reason)
            return True

    def _move(self, target: S, reason: str, at: float | None, stay_reason: str) -> Transition[S]:
        # The caller holds the lock. The time first: a missing clock must change nothing.
        when = self._time(at)
        if stay_reason and self._history:
            last = self._history[-1]
            if last.target is self._state and not last.reason:
                self._history[-1] = attrs.evolve(last, reason=stay_reason)
        record = Transition(when, self._state, target, reason)
        self._state = target
        self._history.append(record)
        if len(self._history) > self._history_limit:
            del self._history[1 if self._keep_first else 0]
        return record

    def _time(self, at: float | None) -> float:
        if at is not None:
            return at
        if self._now is None:
            raise ValueError(f"{self.name}: a transition without a clock must say when it happened")
        return self._now()

    def history(self) -> list[Transition[S]]:
        with self._lock:
            return list(self._history)
