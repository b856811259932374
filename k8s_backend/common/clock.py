"""Injected time: the real clock and a manual one for tests."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time, in seconds since the epoch."""

    def now(self) -> float: ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when a test moves it."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {seconds})")
        with self._lock:
            self._now += seconds

    def set(self, when: float) -> None:
        with self._lock:
            if when < self._now:
                raise ValueError(f"a clock cannot go backwards (from {self._now} to {when})")
            self._now = when
