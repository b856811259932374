"""The timeline's data: spans from executor histories (split where an executor registered), and the
same from pods' own times; the page loads nothing from anywhere."""

from __future__ import annotations

import re

from k8s_backend.report import Marker, Move, from_histories, from_pods, render_html
from k8s_backend.report.builders import pod_moves

T0 = 1_800_000_000.0


def test_spans_follow_the_moves_and_the_running_span_splits_at_registration() -> None:
    pending = Move(T0 + 1, "pending", "Unschedulable: 0/1 nodes")
    moves = [Move(T0, "requested"), pending, Move(T0 + 5, "running")]
    timeline = from_histories("app", {1: moves}, now=T0 + 20, registered_at={1: T0 + 8})
    [line] = timeline.executors
    assert [(s.kind, s.start - T0, s.end - T0) for s in line.spans] == [
        ("requested", 0, 1),
        ("pending", 1, 5),
        ("running", 5, 8),
        ("registered", 8, 20),
    ]
    assert line.spans[1].detail == "Unschedulable: 0/1 nodes"
    assert line.ended == ""


def test_an_ended_executor_says_how_and_a_later_deletion_adds_nothing() -> None:
    moves = [
        Move(T0, "requested"),
        Move(T0 + 1, "running"),
        Move(T0 + 9, "failed", "exit 137 OOMKilled"),
        Move(T0 + 10, "deleted"),
    ]
    [line] = from_histories("app", {3: moves}, now=T0 + 30).executors
    assert [s.kind for s in line.spans] == ["requested", "running", "failed"]
    assert line.spans[-1].start == line.spans[-1].end == T0 + 9
    assert line.ended == "failed: exit 137 OOMKilled"


def test_the_timeline_spans_the_earliest_request_to_now_with_target_and_markers() -> None:
    timeline = from_histories(
        "app",
        {2: [Move(T0 + 3, "requested")], 1: [Move(T0 + 1, "requested")]},
        now=T0 + 50,
        target=[(T0 + 2, 4), (T0, 2)],
        markers=[Marker(T0 + 40, "kill", "executor 2 killed by the driver")],
    )
    assert (timeline.start, timeline.end) == (T0, T0 + 50)
    assert [line.executor_id for line in timeline.executors] == ["1", "2"]
    assert timeline.target == ((T0, 2), (T0 + 2, 4))


def pod(executor_id: int, **status: object) -> dict[str, object]:
    meta = {"name": f"p-{executor_id}", "labels": {"spark-exec-id": str(executor_id)}}
    meta["creationTimestamp"] = "2027-01-15T08:00:00Z"
    spec = {"containers": [{"name": "spark-kubernetes-executor"}]}
    return {"metadata": meta, "spec": spec, "status": status}


def test_pod_times_give_the_moves_of_an_executor_running_elsewhere() -> None:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2027-01-15T08:00:01Z"}
    terminated = {
        "exitCode": 143,
        "reason": "Error",
        "startedAt": "2027-01-15T08:00:04Z",
        "finishedAt": "2027-01-15T08:01:00Z",
    }
    statuses = [{"name": "spark-kubernetes-executor", "state": {"terminated": terminated}}]
    moves = pod_moves(pod(1, conditions=[scheduled], containerStatuses=statuses))
    assert [m.state for m in moves] == ["requested", "pending", "running", "failed"]
    assert "143 (SIGTERM: the executor was asked to stop)" in moves[-1].reason
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient memory.",
        "lastTransitionTime": "2027-01-15T08:00:01Z",
    }
    timeline = from_pods("app", [pod(2, conditions=[unschedulable])], now=T0)
    [line] = timeline.executors
    assert line.spans[-1].kind == "pending"
    assert line.spans[-1].detail == "Unschedulable: 0/3 nodes are available: 3 Insufficient memory."


def test_the_page_is_self_contained_and_escapes_what_it_shows() -> None:
    moves = [Move(T0, "requested"), Move(T0 + 1, "pending", "<script>alert(1)</script>")]
    page = render_html(from_histories("app <1>", {1: moves}, now=T0 + 5))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert not re.search(r"""(src|href)\s*=|@import|url\(|https?://(?!www\.w3\.org/2000/svg)""", page)
    assert "<title>app &lt;1&gt;</title>" in page
