"""An ordered list of independent cleanup steps: one failing step never skips the others.

A cleanup step that still fails after its attempts can be handed to a background retrier that tries it
again every few seconds until it succeeds or the process exits (YuniKorn retries orphaned deletes the
same way), so a short API outage at stop does not leak pods.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence

log = logging.getLogger(__name__)

Step = tuple[str, Callable[[], None]]


def _daemon(name: str, target: Callable[[], None]) -> None:
    threading.Thread(target=target, name=name, daemon=True).start()


class StopSequence:
    """Runs each step, retrying a failing one a few times before giving up with a clear log line."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        attempts: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        background: Collection[str] = (),
        background_interval: float = 5.0,
        spawn: Callable[[str, Callable[[], None]], None] = _daemon,
    ) -> None:
        self._steps = list(steps)
        self._attempts = max(1, attempts)
        self._backoff = backoff
        self._sleep = sleep
        self._background = frozenset(background)
        self._background_interval = background_interval
        self._spawn = spawn
        self.failures: list[tuple[str, str]] = []
        self.completed: list[str] = []
        self.retrying: list[str] = []

    def run(self) -> None:
        for name, step in self._steps:
            if not self._run_step(name, step) and name in self._background:
                self.retrying.append(name)
                self._spawn(f"k8s-backend-retry-{name}", self._retrier(name, step))

    def _run_step(self, name: str, step: Callable[[], None]) -> bool:
        for attempt in range(1, self._attempts + 1):
            try:
                step()
            except Exception as error:
                if attempt == self._attempts:
                    later = " (retrying in the background)" if name in self._background else ""
                    log.error("Giving up on '%s' after %d attempts%s: %s", name, attempt, later, error)
                    self.failures.append((name, str(error)))
                    return False
                log.warning("'%s' failed (attempt %d of %d): %s", name, attempt, self._attempts, error)
                self._sleep(self._backoff * attempt)
            else:
                self.completed.append(name)
                return True
        return False

    def _retrier(self, name: str, step: Callable[[], None]) -> Callable[[], None]:
        return lambda: self._retry_forever(name, step)

    def _retry_forever(self, name: str, step: Callable[[], None]) -> None:
        while True:
            self._sleep(self._background_interval)
            try:
                step()
            except Exception as error:
                log.warning("Background retry of '%s' failed again: %s", name, error)
            else:
                log.info("Background retry of '%s' succeeded", name)
                self.completed.append(name)
                return
