"""An ordered list of independent cleanup steps: one failing step never skips the others."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

Step = tuple[str, Callable[[], None]]


class StopSequence:
    """Runs each step, retrying a failing one a few times before giving up with a clear log line."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        attempts: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._steps = list(steps)
        self._attempts = max(1, attempts)
        self._backoff = backoff
        self._sleep = sleep
        self.failures: list[tuple[str, str]] = []
        self.completed: list[str] = []

    def run(self) -> None:
        for name, step in self._steps:
            self._run_step(name, step)

    def _run_step(self, name: str, step: Callable[[], None]) -> None:
        for attempt in range(1, self._attempts + 1):
            try:
                step()
            except Exception as error:
                if attempt == self._attempts:
                    log.error("Giving up on '%s' after %d attempts: %s", name, attempt, error)
                    self.failures.append((name, str(error)))
                    return
                log.warning("'%s' failed (attempt %d of %d): %s", name, attempt, self._attempts, error)
                self._sleep(self._backoff * attempt)
            else:
                self.completed.append(name)
                return
