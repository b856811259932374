"""StopSequence: every cleanup step runs, failing ones are retried, then given up on loudly."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from k8s_backend.common.stop_sequence import StopSequence


class Step:
    """A cleanup step that fails its first ``failures`` runs."""

    def __init__(self, name: str, log: list[str], failures: int = 0) -> None:
        self.name = name
        self.log = log
        self.failures = failures
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1
        self.log.append(self.name)
        if self.runs <= self.failures:
            raise RuntimeError(f"{self.name} failed (run {self.runs})")


def sequence(*steps: Step, sleeps: list[float], attempts: int = 3) -> StopSequence:
    sleep: Callable[[float], None] = sleeps.append
    return StopSequence([(s.name, s) for s in steps], attempts=attempts, backoff=0.5, sleep=sleep)


def test_steps_run_once_each_in_order() -> None:
    ran: list[str] = []
    sleeps: list[float] = []
    seq = sequence(Step("a", ran), Step("b", ran), Step("c", ran), sleeps=sleeps)
    seq.run()
    assert ran == ["a", "b", "c"]
    assert seq.completed == ["a", "b", "c"]
    assert seq.failures == [] and sleeps == []


def test_a_step_that_keeps_failing_does_not_skip_later_ones(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    sleeps: list[float] = []
    seq = sequence(Step("a", ran), Step("broken", ran, failures=99), Step("c", ran), sleeps=sleeps)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.common.stop_sequence"):
        seq.run()
    assert ran == ["a", "broken", "broken", "broken", "c"]
    assert seq.completed == ["a", "c"]
    assert seq.failures == [("broken", "broken failed (run 3)")]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Giving up on 'broken' after 3 attempts" in errors[0].getMessage()
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_flaky_step_is_retried_with_growing_injected_sleeps_until_it_succeeds() -> None:
    ran: list[str] = []
    sleeps: list[float] = []
    seq = sequence(Step("flaky", ran, failures=2), Step("next", ran), sleeps=sleeps)
    seq.run()
    assert ran == ["flaky", "flaky", "flaky", "next"]
    assert seq.completed == ["flaky", "next"]
    assert seq.failures == []
    assert sleeps == [0.5, 1.0]


def test_no_sleep_after_the_last_attempt() -> None:
    sleeps: list[float] = []
    sequence(Step("x", [], failures=99), sleeps=sleeps, attempts=2).run()
    assert sleeps == [0.5]


def test_at_least_one_attempt_is_made() -> None:
    ran: list[str] = []
    sleeps: list[float] = []
    seq = sequence(Step("x", ran, failures=99), sleeps=sleeps, attempts=0)
    seq.run()
    assert ran == ["x"]
    assert sleeps == []
    assert [name for name, _ in seq.failures] == ["x"]
