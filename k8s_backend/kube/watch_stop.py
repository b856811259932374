"""Ending a list-and-watch loop from another thread (the executor pods' watch, the quota view's)."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


def end_watch(stream: object | None, thread: threading.Thread | None, what: str, timeout: float) -> None:
    """Close the loop's open ``stream`` (its thread then leaves the read at once) and wait up to
    ``timeout`` seconds for ``thread``; ``what`` names the watch in the logs. The caller sets its stop
    flag first, so the loop does not open another stream."""
    if stream is not None:
        try:
            stream.close()  # type: ignore[attr-defined]
        except Exception:
            log.debug("Closing the %s failed", what, exc_info=True)
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)
        if thread.is_alive():
            log.warning("The %s thread did not stop within %.0fs", what, timeout)
