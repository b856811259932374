"""SIGTERM and SIGHUP end a ``pyk8s://`` driver the way Ctrl-C does, so that its cleanup runs.

Used by the PySpark integration (:mod:`k8s_backend.spark`) and by ``k8s-backend submit``; it imports
nothing of pyspark.

By default those signals kill Python on the spot: no ``finally`` block and no ``atexit`` function runs, so
the backend never deletes its executor pods and ConfigMaps, and the driver JVM (which exits when its
Python parent does) can no longer reach the Python backend to stop it. :func:`exit_on_termination` makes
them raise :class:`Terminated` in the main thread, as a scheduler, CI runner, ``timeout`` or a closed
terminal expects. It is a ``KeyboardInterrupt`` on purpose: when the signal interrupts a call into the
JVM (a job's ``collect()``, the SparkContext's start), Py4J drops that call's connection only for a
``KeyboardInterrupt``; after any other exception the thread's next call (pyspark's own clean-up, then the
SparkContext's stop at exit) would wait behind the interrupted one forever. A handler someone else
installed is kept.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType

log = logging.getLogger(__name__)

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: raised in the main thread. Uncaught, Python exits with status 1 after
    its ``atexit`` functions ran, among them
    :meth:`k8s_backend.spark.factory.BackendFactory.stop_at_exit`."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def exit_on_termination() -> None:
    """In the main thread, make SIGTERM and SIGHUP raise :class:`Terminated` unless a handler other than
    the default is installed. Idempotent; does nothing in other threads."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in TERMINATING_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, raise_terminated)


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    log.info("%s received: ending the driver so that its Kubernetes backend cleans up", name)
    raise Terminated(signum)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ignore SIGTERM, SIGHUP and SIGINT while a cleanup runs in the main thread (elsewhere: nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = (*TERMINATING_SIGNALS, signal.SIGINT)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(sig, handler)
