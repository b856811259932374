"""The timeline's data: spans from executor histories (split where an executor registered), and the
same from pods' own times; the page loads nothing from anywhere."""

from __future__ import annotations

import re

from k8s_backend.report import Marker, Move, from_histories, from_pods, render_html
from k8s_backend.report.builders import pod_moves
from k8s_backend.report.pod_events import executor_id_of, gone_executor_moves
from k8s_backend.report.timeline import MARKER_COLOURS

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



def test_a_migrated_marker_is_drawn_in_its_own_colour_and_listed_in_the_legend() -> None:
    text = "executor 1 finished decommissioning: its blocks migrated"
    timeline = from_histories(
        "app",
        {1: [Move(T0, "requested"), Move(T0 + 2, "decommissioning")]},
        now=T0 + 10,
        markers=[Marker(T0 + 2, "decommission", "decommissioning 1"), Marker(T0 + 6, "migrated", text)],
    )
    page = render_html(timeline)
    colour = MARKER_COLOURS["migrated"]
    assert colour not in set(MARKER_COLOURS.values()) - {colour}  # told apart from every other marker
    assert f'<i class="line" style="background:{colour}"></i>migrated</span>' in page
    assert f'stroke="{colour}" class="marker migrated"><title>migrated at ' in page
    assert text in page


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


def test_from_pods_splits_at_the_published_registration_and_keeps_target_markers_and_notes() -> None:
    started = {"running": {"startedAt": "2027-01-15T08:00:04Z"}}
    statuses = [{"name": "spark-kubernetes-executor", "state": started}]
    created = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    timeline = from_pods(
        "app",
        [pod(2, containerStatuses=statuses)],
        now=created + 60,
        registered_at={"2": created + 10, "driver": created},
        target=[(created, 2), (created + 30, 1)],
        markers=[Marker(created + 30, "kill", "the driver killed executors 1")],
        notes=["Registration <as of> T"],
    )
    [line] = timeline.executors
    assert [(s.kind, s.start - created) for s in line.spans] == [
        ("requested", 0),
        ("running", 4),
        ("registered", 10),
    ]
    assert timeline.target == ((created, 2), (created + 30, 1))
    page = render_html(timeline)
    assert '<ul class="notes"><li>Registration &lt;as of&gt; T</li></ul>' in page
    assert "target 1 at 2027-01-15T08:00:30Z" in page and 'class="marker kill"' in page


def test_a_registration_the_driver_timed_before_the_container_start_splits_at_the_start() -> None:
    started = {"running": {"startedAt": "2027-01-15T08:00:04Z"}}
    statuses = [{"name": "spark-kubernetes-executor", "state": started}]
    created = 1_800_000_000.0
    timeline = from_pods("app", [pod(2, containerStatuses=statuses)], now=created + 60,
                         registered_at={"2": created + 3.5})  # fmt: skip
    assert [s.kind for s in timeline.executors[0].spans] == ["requested", "running", "registered"]
    assert timeline.executors[0].spans[-1].start == created + 4


def test_a_terminating_pod_shows_when_its_deletion_was_asked_not_when_its_grace_ends() -> None:
    started = {"running": {"startedAt": "2027-01-15T08:00:04Z"}}
    executor = pod(1, containerStatuses=[{"name": "spark-kubernetes-executor", "state": started}])
    meta = executor["metadata"]
    assert isinstance(meta, dict)
    meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"] = "2027-01-15T08:01:00Z", 30
    assert pod_moves(executor)[-1] == Move(1_800_000_030.0, "terminating", "deletion requested")


def k8s_event(
    pod_name: str, reason: str, seconds: int, message: str = "", *, new_api: bool = False
) -> dict[str, object]:
    when = f"2027-01-15T08:00:{seconds:02d}Z"
    times = (
        {"eventTime": when[:-1] + ".000000Z"} if new_api else {"firstTimestamp": when, "lastTimestamp": when}
    )
    involved = {"kind": "Pod", "name": pod_name, "namespace": "default"}
    return {"involvedObject": involved, "reason": reason, "message": message, **times}


def test_the_events_of_a_deleted_executor_pod_give_its_row() -> None:
    events = [
        # kube-scheduler writes events.k8s.io/v1 Events: eventTime only.
        k8s_event(
            "pi-exec-4",
            "FailedScheduling",
            1,
            "0/3 nodes are available: 3 Insufficient memory.",
            new_api=True,
        ),
        k8s_event("pi-exec-4", "Scheduled", 5, "Successfully assigned default/pi-exec-4 to n", new_api=True),
        k8s_event("pi-exec-4", "Pulled", 6, "Container image already present"),
        k8s_event("pi-exec-4", "Started", 7, "Started container spark-kubernetes-executor"),
        k8s_event("pi-exec-4", "Killing", 30, "Stopping container spark-kubernetes-executor"),
        k8s_event("pi-exec-5", "Started", 7),  # still there: its pod tells more
        k8s_event("other-exec-6", "Started", 7),  # another application's
        k8s_event("pi-driver", "Started", 0),
        # Before this run began: an earlier run's pod of that name.
        {**k8s_event("pi-exec-7", "Killing", 0), "firstTimestamp": "2027-01-15T07:00:00Z"},
    ]
    gone = gone_executor_moves(events, prefixes={"pi"}, live={"pi-exec-5"}, since=T0 + 1)
    assert list(gone) == [4]
    moves = gone[4]
    assert [(m.state, m.time - T0) for m in moves] == [
        ("pending", 1),
        ("running", 7),
        ("terminating", 30),
        ("deleted", 30),
    ]
    assert moves[0].reason == "FailedScheduling: 0/3 nodes are available: 3 Insufficient memory."
    assert moves[2].reason == "Killing: Stopping container spark-kubernetes-executor"
    [line] = from_pods("app", [], now=T0 + 60, gone=gone).executors
    assert line.executor_id == "4" and line.ended.startswith("deleted: its pod was deleted")
    assert executor_id_of("pi-exec-12", ["p", "pi"]) == 12 and executor_id_of("pi-exec-x", ["pi"]) is None
