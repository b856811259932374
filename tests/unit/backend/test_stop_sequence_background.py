"""Deletes that still fail at stop are retried in the background until they succeed."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

import pytest
from backend_harness import make_harness

from k8s_backend.backend.state import BackendState
from k8s_backend.common.stop_sequence import StopSequence
from k8s_backend.kube.port import CONFIG_MAPS, PODS

Spawned = list[tuple[str, Callable[[], None]]]


class Flaky:
    """A cleanup step that fails its first ``failures`` runs."""

    def __init__(self, failures: int, done: threading.Event | None = None) -> None:
        self.failures = failures
        self.runs = 0
        self.done = done
        self.succeeded_on: threading.Thread | None = None

    def __call__(self) -> None:
        self.runs += 1
        if self.runs <= self.failures:
            raise RuntimeError(f"API unavailable (run {self.runs})")
        self.succeeded_on = threading.current_thread()
        if self.done is not None:
            self.done.set()


def sequence(
    steps: list[tuple[str, Callable[[], None]]],
    background: tuple[str, ...],
    spawned: Spawned,
    sleeps: list[float],
) -> StopSequence:
    return StopSequence(
        steps,
        attempts=3,
        backoff=0.5,
        sleep=sleeps.append,
        background=background,
        background_interval=5.0,
        spawn=lambda name, target: spawned.append((name, target)),
    )


def test_a_failing_background_step_is_handed_to_a_retrier(caplog: pytest.LogCaptureFixture) -> None:
    spawned: Spawned = []
    sleeps: list[float] = []
    step = Flaky(failures=5)
    seq = sequence([("delete pods", step), ("after", Flaky(0))], ("delete pods",), spawned, sleeps)
    with caplog.at_level(logging.INFO, logger="k8s_backend.common.stop_sequence"):
        seq.run()
        assert step.runs == 3
        assert seq.completed == ["after"], "the retrier does not hold up the later steps"
        assert seq.retrying == ["delete pods"]
        assert [name for name, _ in spawned] == ["k8s-backend-retry-delete pods"]
        assert any("(retrying in the background)" in r.getMessage() for r in caplog.records)
        sleeps.clear()
        spawned[0][1]()  # what the background thread runs
    assert step.runs == 6
    assert sleeps == [5.0, 5.0, 5.0], "it waits the interval before every retry"
    assert seq.completed == ["after", "delete pods"]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("Background retry of 'delete pods' failed again" in m for m in messages) == 2
    assert "Background retry of 'delete pods' succeeded" in messages


def test_steps_outside_the_background_set_are_only_given_up_on() -> None:
    spawned: Spawned = []
    seq = sequence([("stop threads", Flaky(99))], ("delete pods",), spawned, [])
    seq.run()
    assert spawned == [] and seq.retrying == []
    assert [name for name, _ in seq.failures] == ["stop threads"]


def test_a_background_step_that_succeeds_spawns_nothing() -> None:
    spawned: Spawned = []
    seq = sequence([("delete pods", Flaky(2))], ("delete pods",), spawned, [])
    seq.run()
    assert spawned == [] and seq.retrying == [] and seq.completed == ["delete pods"]


def test_the_default_spawn_retries_on_a_daemon_thread() -> None:
    done = threading.Event()
    step = Flaky(failures=4, done=done)
    seq = StopSequence([("delete pods", step)], sleep=lambda _: None, background=("delete pods",))
    seq.run()
    assert done.wait(timeout=10), "the background retry never succeeded"
    retrier = step.succeeded_on
    assert retrier is not None and retrier is not threading.current_thread()
    assert retrier.name == "k8s-backend-retry-delete pods"
    assert retrier.daemon, "a retrier must never keep the process alive"
    assert step.runs == 5


def test_a_stop_whose_pod_deletion_keeps_failing_is_finished_in_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spawned: Spawned = []
    sleeps: list[float] = []
    monkeypatch.setattr(
        "k8s_backend.assembly.stop_steps.StopSequence",
        functools.partial(StopSequence, sleep=sleeps.append, spawn=lambda n, t: spawned.append((n, t))),
    )
    # Without a heartbeat Lease: the Lease's delete would have the collector take the pods (see
    # test_heartbeat_pod_owner.py), and only the retries are looked at here.
    h = make_harness({"spark.kubernetes.driver.heartbeat.enabled": "false"})
    h.backend.start()
    h.run()
    assert len(h.executor_pods()) == 3
    h.fake.fail_next("delete_collection", PODS, status=503, count=5)
    h.backend.stop()
    assert h.backend.state is BackendState.STOPPED
    assert len(h.executor_pods()) == 3, "still there: every attempt at stop failed"
    assert h.fake.objects(CONFIG_MAPS, "default") == [], "later deletes were not held up"
    assert [name for name, _ in spawned] == ["k8s-backend-retry-delete the executor pods"]
    spawned[0][1]()
    assert h.executor_pods() == []
    assert len(h.fake.calls_of("delete_collection", PODS)) == 6  # 3 at stop, 2 failed retries, 1 success
