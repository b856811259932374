"""A small explicit state machine: allowed transitions in one table, every transition recorded."""

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
    time: float
    source: S
    target: S
    reason: str = ""


class StateMachine(Generic[S]):
    """Holds one state; moves only along ``transitions``; keeps the history with times and reasons."""

    def __init__(
        self,
        name: str,
        initial: S,
        transitions: Mapping[S, frozenset[S]],
        now: Callable[[], float],
        *,
        history_limit: int = 100,
    ) -> None:
        self.name = name
        self._state = initial
        self._transitions = transitions
        self._now = now
        self._history: list[Transition[S]] = []
        self._history_limit = history_limit
        self._lock = threading.Lock()

    @property
    def state(self) -> S:
        return self._state

    def can(self, target: S) -> bool:
        return target in self._transitions.get(self._state, frozenset())

    def transition(self, target: S, reason: str = "") -> Transition[S]:
        """Move to ``target`` or raise :class:`IllegalTransitionError` naming both states."""
        with self._lock:
            if target not in self._transitions.get(self._state, frozenset()):
                raise IllegalTransitionError(
                    f"{self.name}: cannot go from {self._state.value} to {target.value}"
                    + (f" ({reason})" if reason else "")
                )
            record = Transition(self._now(), self._state, target, reason)
            self._state = target
            self._history.append(record)
            if len(self._history) > self._history_limit:
                del self._history[0]
            return record

    def transition_if_allowed(self, target: S, reason: str = "") -> bool:
        """Move to ``target`` if the table allows it from the current state, atomically; else False."""
        with self._lock:
            if target not in self._transitions.get(self._state, frozenset()):
                return False
            record = Transition(self._now(), self._state, target, reason)
            self._state = target
            self._history.append(record)
            if len(self._history) > self._history_limit:
                del self._history[0]
            return True

    def history(self) -> list[Transition[S]]:
        with self._lock:
            return list(self._history)
