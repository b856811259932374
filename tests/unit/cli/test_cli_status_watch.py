"""The driver pod watcher: concise lines on change, re-watching, and the driver's exit code."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_backend.cli.common.status_watch import DriverStatus, describe_pod, exit_code_of, wait_for_driver
from k8s_backend.kube.port import PODS, NotFoundError
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
NS, NAME = "default", "app-driver"


def pod(phase: str = "Pending", node: str | None = None, **status: Any) -> Obj:
    body: Obj = {
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {},
        "status": {"phase": phase, **status},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def container(state: Obj, name: str = "spark-kubernetes-driver") -> Obj:
    return {
        "containerStatuses": [{"name": "sidecar", "state": {"running": {}}}, {"name": name, "state": state}]
    }


def test_unschedulable_pods_say_why() -> None:
    unschedulable = pod(
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient cpu.",
            }
        ]
    )
    assert (
        describe_pod(unschedulable) == "Pending, Unschedulable (0/3 nodes are available: 3 Insufficient cpu.)"
    )


def test_image_pull_problems_show_the_reason_and_message() -> None:
    waiting = pod(
        node="node-1",
        **container({"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x:1"'}}),
    )
    assert describe_pod(waiting) == (
        "Pending on node-1; container spark-kubernetes-driver waiting: "
        'ImagePullBackOff (Back-off pulling image "x:1")'
    )


def test_running_and_terminated_states() -> None:
    assert describe_pod(pod("Running", "n", **container({"running": {"startedAt": "t"}}))) == (
        "Running on n; container spark-kubernetes-driver running"
    )
    failed = pod("Failed", "n", **container({"terminated": {"exitCode": 3, "reason": "Error"}}))
    assert (
        describe_pod(failed)
        == "Failed on n; container spark-kubernetes-driver terminated: exit code 3 (Error)"
    )
    assert exit_code_of(failed) == 3
    evicted = pod("Failed", reason="Evicted", message="The node was low on resource: memory.")
    assert describe_pod(evicted) == "Failed, Evicted: The node was low on resource: memory."


def test_long_messages_are_shortened_to_one_line() -> None:
    line = describe_pod(pod(**container({"waiting": {"reason": "CrashLoopBackOff", "message": "x\n" * 500}})))
    assert "\n" not in line
    assert line.endswith("...)")
    assert len(line) < 300


def test_a_line_is_printed_only_when_something_changed() -> None:
    lines: list[str] = []
    status = DriverStatus(NAME, NS, lines.append)
    status.observe("ADDED", pod())
    status.observe("MODIFIED", pod())  # e.g. an annotation changed: nothing to say
    status.observe("MODIFIED", pod("Running", "n", **container({"running": {}})))
    assert lines == [
        f"driver {NS}/{NAME}: Pending",
        f"driver {NS}/{NAME}: Running on n; container spark-kubernetes-driver running",
    ]
    assert not status.finished
    status.observe("MODIFIED", pod("Succeeded", "n", **container({"terminated": {"exitCode": 0}})))
    assert status.finished
    assert status.exit_code() == 0


def test_a_deleted_driver_ends_the_wait_with_a_failure_code() -> None:
    lines: list[str] = []
    status = DriverStatus(NAME, NS, lines.append)
    status.observe("MODIFIED", pod("Running"))
    status.observe("DELETED", pod("Running"))
    assert status.finished and status.deleted
    assert lines[-1].endswith("(pod deleted)")
    assert status.exit_code() == 1


def _fake_with_driver(**kwargs: Any) -> FakeKubernetes:
    fake = FakeKubernetes(**kwargs)
    fake.create(
        PODS,
        NS,
        {
            "metadata": {"name": NAME},
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "i"}]},
        },
    )
    fake.patch_status(PODS, NS, NAME, {"phase": "Running", **container({"running": {}})})
    return fake


def test_wait_follows_changes_and_returns_the_driver_exit_code() -> None:
    fake = _fake_with_driver()
    lines: list[str] = []

    def driver_fails() -> None:
        fake.patch_status(PODS, NS, NAME, {"phase": "Failed", **container({"terminated": {"exitCode": 42}})})

    assert wait_for_driver(fake, DriverStatus(NAME, NS, lines.append), on_watch=driver_fails) == 42
    assert [line.split(": ", 1)[1] for line in lines] == [
        "Running; container spark-kubernetes-driver running",
        "Failed; container spark-kubernetes-driver terminated: exit code 42",
    ]


def test_wait_watches_again_after_410_gone() -> None:
    fake = _fake_with_driver()
    fake.fail_next("watch", PODS, status=410, count=1)

    def meanwhile() -> None:  # changes while the expired watch is being replaced are not missed
        fake.patch_status(
            PODS, NS, NAME, {"phase": "Succeeded", **container({"terminated": {"exitCode": 0}})}
        )

    assert wait_for_driver(fake, DriverStatus(NAME, NS, lambda _: None), on_watch=meanwhile) == 0
    assert len(fake.calls_of("watch", PODS)) == 1
    assert len(fake.calls_of("get", PODS)) == 2  # a fresh GET after the 410


def test_wait_watches_again_when_the_server_ends_the_stream() -> None:
    fake = _fake_with_driver(watch_blocking=False)  # every watch ends once drained
    watches: list[int] = []

    def second_watch_sees_the_end() -> None:
        watches.append(1)
        if len(watches) == 2:
            fake.patch_status(
                PODS, NS, NAME, {"phase": "Failed", **container({"terminated": {"exitCode": 7}})}
            )

    assert (
        wait_for_driver(fake, DriverStatus(NAME, NS, lambda _: None), on_watch=second_watch_sees_the_end) == 7
    )
    assert len(watches) == 2


def test_wait_ends_when_the_driver_pod_is_deleted() -> None:
    fake = _fake_with_driver()
    lines: list[str] = []
    status = DriverStatus(NAME, NS, lines.append)
    assert wait_for_driver(fake, status, on_watch=lambda: fake.delete(PODS, NS, NAME)) == 1
    assert status.deleted


def test_a_driver_pod_that_never_existed_is_an_error() -> None:
    with pytest.raises(NotFoundError):
        wait_for_driver(FakeKubernetes(), DriverStatus(NAME, NS, lambda _: None))
