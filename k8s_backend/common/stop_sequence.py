"""An ordered list of independent cleanup steps: one failing step never skips the others.

A run can be bounded in time: past the bound, the caller gets control back while the steps go on in the
background (a hung API server must not hold the driver's shutdown for minutes). A cleanup step that still
fails after its attempts can be handed to a background retrier that tries it again every few seconds
until it succeeds or the process exits (YuniKorn retries orphaned deletes the same way), so a short API
outage at stop does not leak pods.
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
        background_attempts: int = 720,
        retryable: Callable[[BaseException], bool] = lambda error: True,
        on_retries_done: Callable[[], None] | None = None,
        spawn: Callable[[str, Callable[[], None]], None] = _daemon,
        timeout: float | None = None,
    ) -> None:
        """``background``: names of steps worth retrying every ``background_interval`` seconds (at most
        ``background_attempts`` times, and only while ``retryable`` says the error may pass) once their
        attempts failed; ``on_retries_done`` runs when the last background retry ends. ``timeout``: the
        longest :meth:`run` blocks its caller (None: until every step ran)."""
        self._steps = list(steps)
        self._attempts = max(1, attempts)
        self._backoff = backoff
        self._sleep = sleep
        self._background = frozenset(background)
        self._background_interval = background_interval
        self._background_attempts = background_attempts
        self._retryable = retryable
        self._on_retries_done = on_retries_done
        self._spawn = spawn
        self._lock = threading.Lock()
        self._last_error: dict[str, BaseException] = {}
        self.failures: list[tuple[str, str]] = []
        self.completed: list[str] = []
        self.retrying: list[str] = []
        self.timeout = timeout
        self.current: str | None = None  # the step running now, for the log line when the bound passes
        self.done = threading.Event()  # every step ran (retries may still go on in the background)

    def run(self, timeout: float | None = None) -> bool:
        """Run every step in order. Returns False when ``timeout`` (default: the sequence's own) passed
        first: the steps then go on on a thread of their own."""
        bound = self.timeout if timeout is None else timeout
        if bound is None:
            self._run_steps()
            return True
        _daemon("k8s-backend-stop", self._run_steps)  # a real thread: the bound is real time
        if self.done.wait(max(0.0, bound)):
            return True
        log.warning(
            "Cleanup is taking longer than %.0f s (now: %s); it goes on in the background",
            bound,
            self.current or "between steps",
        )
        return False

    def _run_steps(self) -> None:
        try:
            self._run_each()
        finally:
            self.current = None
            self.done.set()

    def _run_each(self) -> None:
        for name, step in self._steps:
            if self._run_step(name, step) or name not in self._background:
                continue
            error = self._last_error.get(name)
            if error is not None and not self._retryable(error):
                log.error("Not retrying '%s' in the background: %s will not pass by waiting", name, error)
                continue
            with self._lock:
                self.retrying.append(name)
            self._spawn(f"k8s-backend-retry-{name}", self._retrier(name, step))

    def _run_step(self, name: str, step: Callable[[], None]) -> bool:
        self.current = name
        for attempt in range(1, self._attempts + 1):
            try:
                step()
            except Exception as error:
                self._last_error[name] = error
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
        try:
            for _ in range(self._background_attempts):
                self._sleep(self._background_interval)
                try:
                    step()
                except Exception as error:
                    if not self._retryable(error):
                        log.error("Giving up on '%s' in the background: %s", name, error)
                        return
                    log.warning("Background retry of '%s' failed again: %s", name, error)
                else:
                    log.info("Background retry of '%s' succeeded", name)
                    self.completed.append(name)
                    return
            log.error("Giving up on '%s' after %d background retries", name, self._background_attempts)
        finally:
            with self._lock:
                self.retrying.remove(name)
                done = not self.retrying
            if done and self._on_retries_done is not None:
                self._on_retries_done()
