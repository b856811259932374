"""The kubelet's event loop stops within its timeout: a backlog left then is dropped, not run later
(against an API server that its owner has stopped meanwhile)."""

from __future__ import annotations

import threading

from k8s_backend.local.kubelet.loop import EventLoop


def test_stop_runs_the_posted_tasks_when_they_finish_in_time() -> None:
    loop = EventLoop("test-loop")
    loop.start()
    ran: list[int] = []
    for n in range(3):
        loop.post(lambda n=n: ran.append(n))
    loop.stop(timeout=30)
    assert ran == [0, 1, 2]
    loop.post(lambda: ran.append(99))  # dropped: the loop has stopped
    assert ran == [0, 1, 2]


def test_a_backlog_left_after_the_stop_timeout_is_dropped() -> None:
    loop = EventLoop("test-loop")
    loop.start()
    gate, running = threading.Event(), threading.Event()
    ran: list[int] = []

    def blocking() -> None:
        running.set()
        gate.wait(30)

    loop.post(blocking)
    for n in range(3):
        loop.post(lambda n=n: ran.append(n))
    assert running.wait(30)
    loop.stop(timeout=0.2)  # the blocking task outlives the timeout
    gate.set()  # it ends now; what was queued behind it must not run
    loop._thread.join(30)
    assert not loop._thread.is_alive()
    assert ran == []
