"""Where the parts that can fail the application report it: one sink, built first by the composition root.

The allocator (too many executor failures), the executor monitor (unpullable images) and the gang start
(a Hard gang timed out) each hold the sink; the backend listens to it. Only the first report counts, so
an application is failed once, with the reason that came first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Protocol

log = logging.getLogger(__name__)

FailureListener = Callable[[str], None]

# Marks the log record that tells the application's failure (``log.error(..., extra=FAILURE_RECORD)``): a
# caller that tells the failure in its own words (``k8s-backend submit``) leaves that record out, and
# everyone else (a notebook, a service) still gets the failure through logging.
FAILURE_RECORD_ATTRIBUTE = "k8s_backend_application_failed"
FAILURE_RECORD: Mapping[str, object] = MappingProxyType({FAILURE_RECORD_ATTRIBUTE: True})


def is_failure_record(record: logging.LogRecord) -> bool:
    """Whether ``record`` is the one that tells k8s_backend's failure of the application."""
    return bool(getattr(record, FAILURE_RECORD_ATTRIBUTE, False))


class FailureReporter(Protocol):
    """What a part that can fail the application is given."""

    def report(self, reason: str) -> None:
        """The application cannot go on, for ``reason``."""
        ...


class FailureSink:
    """Thread-safe and once-only: the first :meth:`report` reaches the listeners, later ones are dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[FailureListener] = []
        self._reason: str | None = None

    @property
    def reason(self) -> str | None:
        """The reason first reported, or None."""
        with self._lock:
            return self._reason

    def add_listener(self, listener: FailureListener) -> None:
        """Call ``listener(reason)`` on the first report (listeners are called in the order added)."""
        with self._lock:
            self._listeners.append(listener)

    def report(self, reason: str) -> None:
        """Fail the application; a listener that raises is logged and the others still run."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            listeners = tuple(self._listeners)
        # Outside the lock: a listener may call back into a part that reports again (and is dropped).
        for listener in listeners:
            try:
                listener(reason)
            except Exception:
                log.exception("Application-failed listener raised")
