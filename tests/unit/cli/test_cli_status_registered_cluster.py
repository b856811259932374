"""``k8s-backend status`` shows whether each executor is registered with a cluster-mode driver too. Such a
driver keeps no heartbeat Lease: it writes its registered executors on its own pod when they change
(:class:`RegistrationPublisher`, at most once per interval), and ``status`` and ``list`` read them from the
driver pod they list anyway (no request of their own)."""

from __future__ import annotations

import json
from typing import Any

from cli_support import cli

from k8s_backend.backend.registration_publisher import RegistrationPublisher
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.leases import (
    REGISTERED_EXECUTORS_ANNOTATION,
    REGISTERED_EXECUTORS_AS_OF_ANNOTATION,
    micro_time,
)
from k8s_backend.kube.port import PODS
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes
from k8s_backend.tracking.times import iso_time

APP = "spark-" + "5" * 32
DRIVER = "pi-driver"
M = ["--master", "pyk8s://https://k8s.test:6443"]
START = 1_800_000_000.0
CONTAINER = "spark-kubernetes-executor"
INTERVAL = 20.0


def pod(fake: FakeKubernetes, name: str, role: str, labels: dict[str, str]) -> None:
    meta = {"name": name, "labels": {"spark-app-selector": APP, "spark-role": role, **labels}}
    spec = {"containers": [{"name": CONTAINER, "image": "i"}]}
    fake.create(PODS, "default", {"metadata": meta, "spec": spec})
    statuses = [{"name": CONTAINER, "state": {"running": {}}, "restartCount": 0}]
    fake.patch_status(PODS, "default", name, {"phase": "Running", "containerStatuses": statuses})


def cluster_mode_app(registered: dict[str, float]) -> tuple[FakeKubernetes, RegistrationPublisher, Any]:
    """A driver pod with two running executor pods, whose driver publishes ``registered`` (as it changes)."""
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock)
    pod(fake, DRIVER, "driver", {})
    for executor_id in (1, 2):
        pod(fake, f"pi-exec-{executor_id}", "executor", {"spark-exec-id": str(executor_id)})
    publisher = RegistrationPublisher(
        fake, clock, namespace="default", pod_name=DRIVER, registered=lambda: dict(registered),
        interval=INTERVAL,
    )  # fmt: skip
    publisher.start(ExecutorPodsSnapshotsStore(scheduler, clock), tick_interval=1.0)
    return fake, publisher, scheduler


def driver_annotations(fake: FakeKubernetes) -> dict[str, str]:
    return dict(fake.get(PODS, "default", DRIVER)["metadata"].get("annotations") or {})


def test_the_driver_writes_on_its_pod_at_start_and_then_only_changes_at_most_once_per_interval() -> None:
    registered: dict[str, float] = {}
    fake, publisher, scheduler = cluster_mode_app(registered)
    scheduler.run_until_idle()  # the first tick, at once: none registered yet
    assert json.loads(driver_annotations(fake)[REGISTERED_EXECUTORS_ANNOTATION]) == {}
    assert driver_annotations(fake)[REGISTERED_EXECUTORS_AS_OF_ANNOTATION] == micro_time(START)
    scheduler.advance(30)  # nothing changes: no request
    assert len(fake.calls_of("patch", PODS)) == 1
    registered["1"] = START + 31
    scheduler.advance(1)  # the first change is written at once
    assert list(json.loads(driver_annotations(fake)[REGISTERED_EXECUTORS_ANNOTATION])) == ["1"]
    registered["2"] = START + 33
    scheduler.advance(INTERVAL - 2)  # held within the interval
    assert len(fake.calls_of("patch", PODS)) == 2
    scheduler.advance(2)
    written = json.loads(driver_annotations(fake)[REGISTERED_EXECUTORS_ANNOTATION])
    assert written == {"1": micro_time(START + 31), "2": micro_time(START + 33)}
    scheduler.advance(60)
    assert len(fake.calls_of("patch", PODS)) == publisher.writes == 3


def test_a_failed_write_is_tried_again_after_the_interval() -> None:
    registered = {"1": START}
    fake, publisher, scheduler = cluster_mode_app(registered)
    fake.fail_next("patch", PODS, status=403)
    scheduler.run_until_idle()
    assert (publisher.writes, publisher.failed_writes) == (0, 1)
    scheduler.advance(INTERVAL - 1)
    assert len(fake.calls_of("patch", PODS)) == 1  # not every tick
    scheduler.advance(1)
    assert publisher.writes == 1
    assert list(json.loads(driver_annotations(fake)[REGISTERED_EXECUTORS_ANNOTATION])) == ["1"]


def test_status_table_shows_registered_or_not_for_a_cluster_mode_driver() -> None:
    fake, _, scheduler = cluster_mode_app({"1": START + 3})
    scheduler.run_until_idle()
    result = cli(["status", *M, f"default:{DRIVER}"], fake, wall_clock=lambda: START + 20)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert f"  registered:     1 with the driver (as of {iso_time(START)})" in lines
    header = lines.index(f"Executors of {APP}:") + 1
    assert lines[header].split()[:5] == ["ID", "POD", "NODE", "PHASE", "REGISTERED"]
    assert [r.split()[3:5] for r in lines[header + 1 :]] == [["Running", "yes"], ["Running", "no"]]
    listed = cli(["list", *M], fake, wall_clock=lambda: START + 20).out.splitlines()
    assert listed[0].split()[7] == "REGISTERED"
    assert listed[1].split()[7] == "1"  # after "2 (2 Running)"


def test_status_json_shows_a_cluster_mode_driver_s_registrations_and_when_it_wrote_them() -> None:
    registered = {"1": START + 3}
    fake, _, scheduler = cluster_mode_app(registered)
    scheduler.run_until_idle()
    registered["2"] = START + 4
    scheduler.advance(5)  # the next tick (at 1 s) writes the change
    result = cli(["status", *M, APP, "-o", "json"], fake, wall_clock=lambda: START + 20)
    [app] = json.loads(result.out)["applications"]
    assert app["submissionId"] == f"default:{DRIVER}"
    assert (app["registeredExecutors"], app["registrationsAsOf"]) == (2, iso_time(START + 1))
    by_id = {e["id"]: e for e in app["executors"]}
    assert (by_id["1"]["registered"], by_id["1"]["registeredAt"]) == (True, iso_time(START + 3))
    assert (by_id["2"]["registered"], by_id["2"]["registeredAt"]) == (True, iso_time(START + 4))


def test_a_driver_pod_that_does_not_tell_shows_registration_as_not_known() -> None:
    fake, _, _ = cluster_mode_app({})  # never ticked: an older driver, or none attached
    result = cli(["status", *M, APP, "-o", "json"], fake, wall_clock=lambda: START + 20)
    [app] = json.loads(result.out)["applications"]
    assert (app["registeredExecutors"], app["registrationsAsOf"]) == (None, None)
    assert {e["registered"] for e in app["executors"]} == {None}
    table = cli(["status", *M, APP], fake, wall_clock=lambda: START + 20).out
    assert "  registered:     - (not known: the driver does not tell)" in table.splitlines()
