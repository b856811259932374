"""The local kubelet's Event recorder: core/v1 Events in the real shapes, deduplicated with a count,
coalesced writes, expiry after the TTL, and the Events a kubelet and its scheduler record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubelet_support import wait_for

from k8s_backend.common.clock import ManualClock
from k8s_backend.kube.port import EVENTS, PODS, Obj
from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.local.kubelet.events import NORMAL, SCHEDULER, WARNING, EventRecorder
from k8s_backend.testing import FakeKubernetes

START = 1796119200.0  # 2026-12-01T10:00:00Z


def make_pod(fake: FakeKubernetes, name: str, memory: str = "100Mi", image: str = "spark:1") -> Obj:
    spec = {"containers": [{"name": "c", "image": image, "resources": {"requests": {"memory": memory}}}]}
    return fake.create(PODS, "default", {"metadata": {"name": name}, "spec": spec})


def events(fake: FakeKubernetes) -> list[Obj]:
    return fake.list(EVENTS, "default").items


def by_reason(fake: FakeKubernetes, pod: str) -> dict[str, Obj]:
    return {e["reason"]: e for e in events(fake) if e["involvedObject"]["name"] == pod}


@pytest.fixture
def recorder() -> tuple[FakeKubernetes, ManualClock, EventRecorder]:
    fake = FakeKubernetes()
    clock = ManualClock(START)
    return fake, clock, EventRecorder(fake, clock=clock, ttl=3600.0)


def test_a_kubelet_event_has_the_legacy_core_v1_shape(recorder: Any) -> None:
    fake, _, events_ = recorder
    pod = make_pod(fake, "p")
    events_.record(
        pod, NORMAL, "Killing", "Stopping container c", host="node-1", field_path="spec.containers{c}"
    )
    assert events_.write_pending() == 1
    [event] = events(fake)
    assert event["metadata"]["name"].startswith("p.")
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": pod["metadata"]["uid"],
        "resourceVersion": pod["metadata"]["resourceVersion"],
        "fieldPath": "spec.containers{c}",
    }
    assert (event["type"], event["reason"], event["message"]) == (NORMAL, "Killing", "Stopping container c")
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-12-01T10:00:00Z"
    assert event["source"] == {"component": "kubelet", "host": "node-1"}
    assert event["reportingComponent"] == "kubelet"


def test_a_scheduler_event_has_the_events_k8s_io_shape(recorder: Any) -> None:
    fake, _, events_ = recorder
    events_.record(make_pod(fake, "p"), WARNING, "FailedScheduling", "0/1 nodes", component=SCHEDULER)
    events_.write_pending()
    [event] = events(fake)
    assert event["eventTime"] == "2026-12-01T10:00:00.000000Z"
    assert event["reportingComponent"] == SCHEDULER and event["source"] == {}
    assert event["action"] == "Scheduling" and "series" not in event


def test_repeats_count_up_one_event_and_a_different_message_is_another(recorder: Any) -> None:
    fake, clock, events_ = recorder
    pod = make_pod(fake, "p")
    events_.record(pod, WARNING, "Failed", "Error: ErrImagePull")
    events_.write_pending()
    clock.advance(5)
    events_.record(pod, WARNING, "Failed", "Error: ErrImagePull")
    assert events_.write_pending() == 1  # a patch, not a second Event
    [event] = events(fake)
    assert event["count"] == 2
    assert (event["firstTimestamp"], event["lastTimestamp"]) == (
        "2026-12-01T10:00:00Z",
        "2026-12-01T10:00:05Z",
    )
    events_.record(pod, WARNING, "Failed", "Error: ImagePullBackOff")
    events_.record(make_pod(fake, "q"), WARNING, "Failed", "Error: ErrImagePull")  # another pod
    events_.write_pending()
    assert sorted((e["involvedObject"]["name"], e["message"], e["count"]) for e in events(fake)) == [
        ("p", "Error: ErrImagePull", 2),
        ("p", "Error: ImagePullBackOff", 1),
        ("q", "Error: ErrImagePull", 1),
    ]


def test_repeats_before_a_write_are_coalesced_into_one_request(recorder: Any) -> None:
    fake, clock, events_ = recorder
    pod = make_pod(fake, "p")
    for _ in range(1000):  # a pod retried by the scheduler a thousand times
        events_.record(pod, WARNING, "FailedScheduling", "0/2 nodes", component=SCHEDULER)
        clock.advance(1)
    assert events_.write_pending() == 1
    [event] = events(fake)
    assert event["series"] == {"count": 1000, "lastObservedTime": "2026-12-01T10:16:39.000000Z"}
    for _ in range(3):
        events_.record(pod, WARNING, "FailedScheduling", "0/2 nodes", component=SCHEDULER)
    assert events_.write_pending() == 1
    assert events(fake)[0]["series"]["count"] == 1003
    assert len(events_) == 1


def test_events_expire_after_the_ttl_since_last_seen(recorder: Any) -> None:
    fake, clock, events_ = recorder
    old, fresh = make_pod(fake, "old"), make_pod(fake, "fresh")
    events_.record(old, NORMAL, "Started", "Started container c")
    events_.record(fresh, NORMAL, "Started", "Started container c")
    events_.write_pending()
    clock.advance(3000)
    events_.record(fresh, NORMAL, "Started", "Started container c")  # seen again: lives on
    events_.write_pending()
    clock.advance(700)
    assert events_.expire() == 1
    assert [e["involvedObject"]["name"] for e in events(fake)] == ["fresh"]
    assert len(events_) == 1
    clock.advance(3000)
    assert events_.expire() == 1
    assert events(fake) == [] and len(events_) == 0


def test_an_event_deleted_by_someone_else_is_written_anew(recorder: Any) -> None:
    fake, _, events_ = recorder
    pod = make_pod(fake, "p")
    events_.record(pod, NORMAL, "Pulled", "present")
    events_.write_pending()
    fake.delete(EVENTS, "default", events(fake)[0]["metadata"]["name"])
    events_.record(pod, NORMAL, "Pulled", "present")
    events_.write_pending()  # the patch finds nothing
    events_.record(pod, NORMAL, "Pulled", "present")
    events_.write_pending()
    [event] = events(fake)
    assert event["count"] == 3


def test_the_writer_thread_writes_and_stop_ends_recording(recorder: Any) -> None:
    fake, _, events_ = recorder
    events_.start()
    pod = make_pod(fake, "p")
    events_.record(pod, NORMAL, "Pulled", "present")
    assert events_.wait_idle(10)
    assert len(events(fake)) == 1
    events_.stop()
    events_.record(pod, NORMAL, "Created", "Created container: c")
    assert len(events(fake)) == 1


def test_a_bad_ttl_is_refused(recorder: Any) -> None:
    fake, clock, _ = recorder
    with pytest.raises(ValueError, match="ttl=0"):
        EventRecorder(fake, clock=clock, ttl=0)


def test_the_kubelet_records_image_pull_failures_and_back_off_once_each_with_counts(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    kubelet = ProcessKubelet(
        fake,
        work_dir=tmp_path,
        nodes=[Node.of("node-1")],
        run_processes=False,
        images=ImagePolicy(["spark:1"], backoff_initial=0.01, backoff_max=0.02),
    )
    with kubelet:
        make_pod(fake, "p", image="nope:1")

        def retried() -> bool:
            assert kubelet.events is not None
            kubelet.events.wait_idle()
            failed = [e for e in events(fake) if e["message"] == "Error: ErrImagePull"]
            return bool(failed) and failed[0]["count"] >= 3

        assert wait_for(retried)
        reasons = by_reason(fake, "p")
        assert {"Scheduled", "Pulling", "Failed", "BackOff"} <= set(reasons)
        assert reasons["BackOff"]["message"] == 'Back-off pulling image "nope:1"'
        assert reasons["BackOff"]["count"] >= 2
        # one Event per distinct (reason, message), however many retries
        assert sorted(e["message"].split(":")[0] for e in events(fake) if e["reason"] == "Failed") == [
            "Error",
            "Error",
            'Failed to pull image "nope',
        ]
        assert len(events(fake)) == 6  # Scheduled, Pulling, BackOff and those 3 Failed


def test_the_writer_yields_while_records_keep_coming_but_not_beyond_max_delay() -> None:
    fake, clock, ticks = FakeKubernetes(), ManualClock(START), ManualClock(100.0)
    events_ = EventRecorder(fake, clock=clock, quiet=0.25, max_delay=5.0, monotonic=ticks.now)
    pods = [make_pod(fake, f"p{i}") for i in range(3)]
    events_.record(pods[0], NORMAL, "Started", "Started container c")
    assert events_.write_pending(yielding=True) == 0  # a burst is on: leave the interpreter to it
    ticks.advance(0.3)
    assert events_.write_pending(yielding=True) == 1  # quiet for 0.3 s: written
    for i in range(60):  # a record every 0.1 s for 6 s: never quiet, but nothing waits over 5 s
        ticks.advance(0.1)
        events_.record(pods[1 + i % 2], NORMAL, "Started", "Started container c")
        if events_.write_pending(yielding=True):
            break
    assert 50 <= i <= 51 and len(events(fake)) == 3  # 5 s after the first unwritten record (100.4)
