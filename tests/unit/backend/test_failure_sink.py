"""FailureSink: the one place parts report that the application cannot go on."""

from __future__ import annotations

import threading

import pytest

from k8s_backend.common.failure_sink import FailureSink


def test_only_the_first_report_reaches_the_listeners_in_order() -> None:
    sink = FailureSink()
    seen: list[tuple[str, str]] = []
    sink.add_listener(lambda reason: seen.append(("a", reason)))
    sink.add_listener(lambda reason: seen.append(("b", reason)))
    sink.report("first")
    sink.report("second")
    assert seen == [("a", "first"), ("b", "first")]
    assert sink.reason == "first"


def test_a_listener_that_raises_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    sink = FailureSink()
    seen: list[str] = []

    def broken(reason: str) -> None:
        raise RuntimeError("listener bug")

    sink.add_listener(broken)
    sink.add_listener(seen.append)
    sink.report("why")
    assert seen == ["why"]
    assert "Application-failed listener raised" in caplog.text


def test_concurrent_reports_fail_the_application_once() -> None:
    sink = FailureSink()
    seen: list[str] = []
    sink.add_listener(seen.append)
    threads = [threading.Thread(target=sink.report, args=(f"r{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 1


def test_a_listener_reporting_again_is_dropped_not_recursed() -> None:
    sink = FailureSink()
    seen: list[str] = []

    def again(reason: str) -> None:
        seen.append(reason)
        sink.report("nested")

    sink.add_listener(again)
    sink.report("outer")
    assert seen == ["outer"]
