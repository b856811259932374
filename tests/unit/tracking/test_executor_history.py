"""Every executor transition is kept with its time and reason, and shown on one line."""

from __future__ import annotations

import re

from executor_tracking_pods import T0, make_tracker, observe

from k8s_backend.tracking.states import ExecutorState

S = ExecutorState


def clock_times(history: str) -> str:
    """A history with each of its ISO 8601 times (this test's day, UTC, milliseconds) cut to HH:MM:SS;
    a time in any other form is left alone, so that the comparison fails."""
    return re.sub(r"\b2026-01-01T(\d\d:\d\d:\d\d)\.000Z", r"\1", history)


def test_the_history_line_reads_like_the_issue_example() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)  # 12:00:01
    observe(tracker, T0 + 1, 1, "Pending", unschedulable="0/3 nodes have enough memory")
    observe(tracker, T0 + 39, 1, "Running")
    observe(tracker, T0 + 310, 1, "Failed", exit_code=137, reason="OOMKilled")
    assert clock_times(tracker.describe(1)) == (
        "requested 12:00:01, pending 12:00:02 (Unschedulable: 0/3 nodes have enough memory), "
        "running 12:00:40, failed 12:05:11 exit 137 OOMKilled"
    )


def test_an_evicted_executor_says_evicted_not_an_unexpected_exit() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 39, 1, "Running")
    observe(tracker, T0 + 99, 1, "Failed", evicted="The node was low on resource: memory.")
    assert clock_times(tracker.describe(1)) == "requested 12:00:01, running 12:00:40, failed 12:01:40 Evicted"
    tracker.requested(2, 0, T0)
    observe(tracker, T0 + 99, 2, "Failed", evicted="", exit_code=137)
    assert clock_times(tracker.describe(2)).endswith("failed 12:01:40 Evicted (exit 137)")


def test_a_pending_executor_shows_its_current_reason() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending", waiting="ImagePullBackOff", waiting_message="Back-off pulling")
    assert clock_times(tracker.describe(1)) == (
        "requested 12:00:01, pending 12:00:02 (ImagePullBackOff: Back-off pulling)"
    )


def test_the_reason_kept_is_the_last_one_seen_before_leaving_pending() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending", unschedulable="0/3 nodes are available")
    observe(tracker, T0 + 5, 1, "Pending", waiting="ErrImagePull")
    observe(tracker, T0 + 9, 1, "Running")
    expected = "requested 12:00:01, pending 12:00:02 (ErrImagePull), running 12:00:10"
    assert clock_times(tracker.describe(1)) == expected


def test_a_pod_that_simply_started_has_no_reason() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending", waiting="ContainerCreating")
    observe(tracker, T0 + 2, 1, "Running")
    assert clock_times(tracker.describe(1)) == "requested 12:00:01, pending 12:00:02, running 12:00:03"


def test_exit_details_name_the_code_and_any_telling_reason() -> None:
    tracker = make_tracker()
    for executor_id in (1, 2, 3):
        tracker.requested(executor_id, 0, T0)
    observe(tracker, T0 + 1, 1, "Failed", exit_code=1, reason="Error")
    observe(tracker, T0 + 1, 2, "Succeeded", exit_code=0, reason="Completed")
    observe(tracker, T0 + 1, 3, "Failed", exit_code=143, reason="ContainerCannotRun")
    assert clock_times(tracker.describe(1)).endswith("failed 12:00:02 exit 1")
    assert clock_times(tracker.describe(2)).endswith("succeeded 12:00:02 exit 0")
    assert clock_times(tracker.describe(3)).endswith("failed 12:00:02 exit 143 ContainerCannotRun")


def test_hook_events_carry_their_reason() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Running")
    tracker.decommissioning([1], T0 + 2)
    tracker.killed([1], T0 + 3)
    tracker.lost(1, "executor heartbeat timed out", T0 + 4)
    assert clock_times(tracker.describe(1)) == (
        "requested 12:00:01, running 12:00:02, decommissioning 12:00:03 decommission requested, "
        "terminating 12:00:04 killed by the driver, lost 12:00:05 executor heartbeat timed out"
    )


def test_a_failed_creation_is_in_the_history_with_the_api_message() -> None:
    tracker = make_tracker()
    message = '403 Forbidden: pods "x" is forbidden: exceeded quota: compute, requested: memory=1408Mi'
    tracker.creation_failed(4, 0, message, T0)
    record = tracker.record(4)
    assert record is not None and record.state is S.FAILED
    expected = f"requested 12:00:01, failed 12:00:01 pod creation failed: {message}"
    assert clock_times(tracker.describe(4)) == expected


def test_unknown_executors_are_described_as_such() -> None:
    assert make_tracker().describe(42) == "executor 42: unknown"


def test_a_long_history_keeps_the_request_and_the_latest_entries() -> None:
    tracker = make_tracker(history_limit=3)
    tracker.requested(1, 0, T0)
    observe(tracker, T0 + 1, 1, "Pending")
    observe(tracker, T0 + 2, 1, "Running")
    tracker.decommissioning([1], T0 + 3)
    tracker.killed([1], T0 + 4)
    record = tracker.record(1)
    assert record is not None
    assert [e.target for e in record.history] == [S.REQUESTED, S.DECOMMISSIONING, S.TERMINATING]


def test_only_the_oldest_finished_executors_are_forgotten() -> None:
    tracker = make_tracker(max_finished=2)
    for executor_id in (1, 2, 3, 4):
        tracker.requested(executor_id, 0, T0)
    for executor_id in (1, 2, 3):
        observe(tracker, T0 + executor_id, executor_id, "Failed", exit_code=1)
    assert tracker.record(1) is None
    assert tracker.record(2) is not None and tracker.record(3) is not None
    assert tracker.record(4) is not None, "a live executor is never forgotten"


def test_the_summary_counts_states_and_lists_recent_histories() -> None:
    tracker = make_tracker()
    for executor_id in range(1, 26):
        tracker.requested(executor_id, 0, T0)
    observe(tracker, T0 + 1, 25, "Running")
    summary = tracker.summary(T0 + 1)
    assert summary["counts"] == {"requested": 24, "running": 1}
    histories = summary["histories"]
    assert isinstance(histories, dict)
    assert sorted(histories, key=int) == [str(i) for i in range(6, 26)], "the 20 newest executors"
    assert clock_times(histories["25"]) == "requested 12:00:01, running 12:00:02"
    assert summary["stuck"] == [] and summary["illegal_transitions"] == 0


def test_history_times_are_iso_8601_in_utc_with_the_date_and_milliseconds() -> None:
    tracker = make_tracker()
    tracker.requested(1, 0, T0 + 0.25)
    assert tracker.describe(1) == "requested 2026-01-01T12:00:01.250Z"
    assert tracker.summary(T0 + 1)["histories"] == {"1": "requested 2026-01-01T12:00:01.250Z"}
