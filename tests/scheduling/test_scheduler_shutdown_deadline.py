"""ThreadScheduler.shutdown(timeout) bounds the whole shutdown, not each thread."""

from __future__ import annotations

import threading
import time

from k8s_backend.scheduling import ThreadScheduler


def test_shutdown_grace_is_a_total_bound() -> None:
    scheduler = ThreadScheduler("grace", threads=3)
    release = threading.Event()
    started = threading.Barrier(4)

    def busy() -> None:
        started.wait()
        release.wait(10)

    for _ in range(3):
        scheduler.submit(busy)
    started.wait(5)
    began = time.monotonic()
    scheduler.shutdown(0.5)
    took = time.monotonic() - began
    release.set()
    assert took < 1.2, f"shutdown(0.5) took {took:.2f}s with 3 busy threads"
