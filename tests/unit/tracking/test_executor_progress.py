"""The progress line: its words, its rate limit (manual clock), and where it goes (one copy, always)."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator

import pytest

from k8s_backend.common import ManualClock
from k8s_backend.tracking.pod_reasons import PendingReason
from k8s_backend.tracking.progress import (
    LOGGER_NAME,
    ExecutorProgress,
    ProgressReporter,
    emit,
    group_reasons,
)
from k8s_backend.tracking.states import ExecutorState

UNSCHEDULABLE = PendingReason(
    "Unschedulable", "0/3 nodes are available: 3 Insufficient memory."
)
PULL = PendingReason("ErrImagePull", 'failed to pull "spark:9": not found')
BACK_OFF = PendingReason("ImagePullBackOff", 'Back-off pulling image "spark:9"')


def test_the_line_names_requested_pending_with_the_reason_running_and_registered() -> (
    None
):
    counts = {ExecutorState.PENDING: 2, ExecutorState.RUNNING: 6, ExecutorState.LOST: 3}
    progress = ExecutorProgress.of(
        counts, [UNSCHEDULABLE, UNSCHEDULABLE], requested=8, registered=5
    )
    assert progress.line() == (
        "executors: 8 requested, 2 pending (Unschedulable: 0/3 nodes are available: 3 Insufficient "
        "memory.), 6 running, 5 registered"
    )


def test_requested_but_unseen_pods_count_as_pending_and_stopping_ones_are_shown() -> (
    None
):
    counts = {
        ExecutorState.REQUESTED: 1,
        ExecutorState.PENDING: 1,
        ExecutorState.RUNNING: 2,
        ExecutorState.TERMINATING: 1,
        ExecutorState.DECOMMISSIONING: 1,
    }
    line = ExecutorProgress.of(counts, [], requested=4, registered=2).line()
    assert (
        line == "executors: 4 requested, 2 pending, 2 running, 2 stopping, 2 registered"
    )


def test_executors_not_created_yet_are_pending() -> None:
    line = ExecutorProgress.of({ExecutorState.RUNNING: 1}, [], requested=3, registered=1).line()
    assert line == "executors: 3 requested, 2 pending, 1 running, 1 registered"
    fewer = ExecutorProgress.of({ExecutorState.RUNNING: 3}, [], requested=2, registered=3).line()
    assert fewer == "executors: 2 requested, 0 pending, 3 running, 3 registered"


def test_several_reasons_are_counted_most_common_first() -> None:
    other = PendingReason("CreateContainerConfigError", 'secret "creds" not found')
    third = PendingReason(
        "Unschedulable", "0/3 nodes are available: 3 node(s) had untolerated taint."
    )
    counts = {ExecutorState.PENDING: 5}
    line = ExecutorProgress.of(
        counts, [other, UNSCHEDULABLE, UNSCHEDULABLE, third], requested=5, registered=0
    )
    assert line.line() == (
        "executors: 5 requested, 5 pending (2 Unschedulable: 0/3 nodes are available: 3 Insufficient "
        'memory.; 1 CreateContainerConfigError: secret "creds" not found; +1 more), 0 running, 0 registered'
    )


def test_a_reason_some_pending_executors_have_is_counted() -> None:
    line = ExecutorProgress.of(
        {ExecutorState.PENDING: 3}, [UNSCHEDULABLE], requested=3, registered=0
    ).line()
    assert "3 pending (1 Unschedulable: " in line


def test_pull_retries_are_one_reason_shown_with_the_pull_error() -> None:
    assert group_reasons([BACK_OFF, PULL, BACK_OFF]) == ((str(PULL), 3),)


def test_a_long_reason_is_cut_to_one_short_line() -> None:
    long = PendingReason("Unschedulable", "0/300 nodes are available:\n" + "x" * 500)
    ((text, count),) = group_reasons([long])
    assert count == 1
    assert len(text) == 160
    assert text.endswith("…")
    assert "\n" not in text


# -- rate limit --------------------------------------------------------------------------------------


class Script:
    """A progress that the test sets, and the lines the reporter wrote."""

    def __init__(self) -> None:
        self.progress = ExecutorProgress()
        self.lines: list[str] = []

    def set(self, requested: int = 0, pending: int = 0, running: int = 0) -> None:
        self.progress = ExecutorProgress(requested=requested, pending=pending, running=running)


def reporter(
    script: Script, clock: ManualClock, interval: float = 1.0
) -> ProgressReporter:
    return ProgressReporter(
        lambda: script.progress, clock, interval=interval, write=script.lines.append
    )


def test_one_line_per_change_and_none_while_nothing_changes() -> None:
    clock, script = ManualClock(100.0), Script()
    progress = reporter(script, clock)
    progress.tick()
    assert script.lines == []  # nothing asked for yet: no line
    script.set(requested=2, pending=2)
    progress.tick()
    for _ in range(5):
        clock.advance(1.0)
        progress.tick()
    script.set(requested=2, pending=1, running=1)
    clock.advance(1.0)
    progress.tick()
    assert script.lines == [
        "executors: 2 requested, 2 pending, 0 running, 0 registered",
        "executors: 2 requested, 1 pending, 1 running, 0 registered",
    ]


def test_a_burst_shows_at_most_one_line_per_interval_and_always_its_end() -> None:
    clock, script = ManualClock(100.0), Script()
    progress = reporter(script, clock, interval=1.0)
    script.set(requested=4, pending=4)
    progress.tick()
    for running in range(1, 5):  # four changes within 0.4s
        clock.advance(0.1)
        script.set(requested=4, pending=4 - running, running=running)
        progress.tick()
    assert len(script.lines) == 1
    clock.advance(
        0.6
    )  # one interval after the first line: the state the burst ended in
    progress.tick()
    assert (
        script.lines[-1] == "executors: 4 requested, 0 pending, 4 running, 0 registered"
    )
    assert len(script.lines) == 2


def test_a_change_back_within_the_interval_shows_nothing() -> None:
    clock, script = ManualClock(100.0), Script()
    progress = reporter(script, clock)
    script.set(requested=1, pending=1)
    progress.tick()
    clock.advance(0.2)
    script.set(requested=1, running=1)
    progress.tick()
    clock.advance(0.2)
    script.set(requested=1, pending=1)
    progress.tick()
    clock.advance(1.0)
    progress.tick()
    assert script.lines == [
        "executors: 1 requested, 1 pending, 0 running, 0 registered"
    ]


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ProgressReporter(ExecutorProgress, ManualClock(), interval=0)


# -- where it goes -----------------------------------------------------------------------------------


@contextlib.contextmanager
def python_default_logging() -> Iterator[None]:
    """Logging as a fresh interpreter has it (root at WARNING, no handler), put back afterwards.

    Entered in the test's body: pytest puts its own capture handler (at INFO here) on the root logger
    for every test phase, which would count as an application's configuration.
    """
    root = logging.getLogger()
    loggers = [logging.getLogger(name) for name in ("k8s_backend", LOGGER_NAME)]
    saved = (
        root.level,
        list(root.handlers),
        [(lg.level, list(lg.handlers), lg.propagate) for lg in loggers],
    )
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.setLevel(saved[0])
        root.handlers = saved[1]
        for lg, (level, handlers, propagate) in zip(loggers, saved[2], strict=True):
            lg.setLevel(level)
            lg.handlers = handlers
            lg.propagate = propagate


def test_by_default_the_line_is_written_to_stderr_once() -> None:
    with python_default_logging():
        stream = io.StringIO()
        emit("executors: 1 requested", stream=stream)
        assert stream.getvalue() == "executors: 1 requested\n"


def test_the_default_stream_is_the_current_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with python_default_logging():
        emit("executors: 1 requested")
        assert capsys.readouterr().err == "executors: 1 requested\n"


def test_an_application_that_configured_logging_gets_one_copy_from_its_handler() -> (
    None
):
    with python_default_logging():
        handled, stream = io.StringIO(), io.StringIO()
        logging.basicConfig(
            level=logging.INFO,
            stream=handled,
            format="%(name)s %(message)s",
            force=True,
        )
        emit("executors: 1 requested", stream=stream)
        assert handled.getvalue() == f"{LOGGER_NAME} executors: 1 requested\n"
        assert stream.getvalue() == ""


def test_a_handler_on_the_progress_logger_alone_takes_the_line() -> None:
    with python_default_logging():
        handled, stream = io.StringIO(), io.StringIO()
        logging.basicConfig(
            level=logging.WARNING, stream=io.StringIO(), force=True
        )  # root: WARNING
        progress_logger = logging.getLogger(LOGGER_NAME)
        progress_logger.setLevel(logging.INFO)
        progress_logger.addHandler(logging.StreamHandler(handled))
        progress_logger.propagate = False
        emit("executors: 1 requested", stream=stream)
        assert handled.getvalue() == "executors: 1 requested\n"
        assert stream.getvalue() == ""


def test_root_at_warning_with_a_handler_still_shows_the_line_once() -> None:
    with python_default_logging():
        handled, stream = io.StringIO(), io.StringIO()
        logging.basicConfig(level=logging.WARNING, stream=handled, force=True)
        emit("executors: 1 requested", stream=stream)
        assert handled.getvalue() == ""
        assert stream.getvalue() == "executors: 1 requested\n"


@pytest.mark.parametrize("name", ["k8s_backend", LOGGER_NAME])
def test_a_level_above_info_on_k8s_backend_silences_the_line(name: str) -> None:
    with python_default_logging():
        stream = io.StringIO()
        logging.getLogger(name).setLevel(logging.WARNING)
        emit("executors: 1 requested", stream=stream)
        assert stream.getvalue() == ""


def test_a_null_handler_does_not_count_as_delivery() -> None:
    with python_default_logging():
        stream = io.StringIO()
        logging.getLogger("k8s_backend").addHandler(logging.NullHandler())
        emit("executors: 1 requested", stream=stream)
        assert stream.getvalue() == "executors: 1 requested\n"


def test_a_closed_stderr_does_not_raise() -> None:
    with python_default_logging():
        stream = io.StringIO()
        stream.close()
        emit("executors: 1 requested", stream=stream)
