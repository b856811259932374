"""ThreadScheduler.shutdown(timeout) bounds the whole shutdown, not each thread."""

from __future__ import annotations

import threading
import time

from k8s_backend.common import ThreadScheduler


def test_shutdown_grace_is_a_total_bound() -> None:
    scheduler = ThreadScheduler("grace", threads=3)
    release = threading.Event()
    started = threading.Barrier(4)

    def busy() -> None:
        started.wait()
        release.wait(10)

    for _ in range(3):
        scheduler.submit(busy)
    started.wait(60)
    began = time.monotonic()
    scheduler.shutdown(2.0)
    took = time.monotonic() - began
    release.set()
    # One grace period for all three threads takes 2 s; one per thread would take 6 s. The margin
    # between the two absorbs a loaded machine.
    assert took < 5.0, f"shutdown(2.0) took {took:.2f}s with 3 busy threads"
