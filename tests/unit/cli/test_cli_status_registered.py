"""``k8s-backend status`` shows whether each executor is registered with its driver, not only whether
its pod runs. A client-mode driver's heartbeat renewal writes its registered executors into the Lease
(no request of its own); ``status`` reads that Lease: one ``get`` per application."""

from __future__ import annotations

import json
from typing import Any

from cli_support import cli

from k8s_backend.backend.heartbeat import DriverHeartbeat
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.leases import REGISTERED_EXECUTORS_ANNOTATION, heartbeat_lease_name, micro_time
from k8s_backend.kube.port import LEASES, PODS
from k8s_backend.memkube.server import rfc3339
from k8s_backend.testing import FakeKubernetes
from k8s_backend.tracking.times import iso_time

APP = "spark-" + "7" * 32
LEASE = heartbeat_lease_name(APP)
M = ["--master", "pyk8s://https://k8s.test:6443"]
START = 1_800_000_000.0
CONTAINER = "spark-kubernetes-executor"


def running_executor(fake: FakeKubernetes, executor_id: int) -> None:
    name = f"pi-exec-{executor_id}"
    labels = {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-id": str(executor_id)}
    spec = {"containers": [{"name": CONTAINER, "image": "i"}]}
    fake.create(PODS, "default", {"metadata": {"name": name, "labels": labels}, "spec": spec})
    statuses = [{"name": CONTAINER, "state": {"running": {}}, "restartCount": 0}]
    fake.patch_status(PODS, "default", name, {"phase": "Running", "containerStatuses": statuses})


def client_mode_app(registered: dict[str, float]) -> tuple[FakeKubernetes, DriverHeartbeat, Any]:
    """Two running executor pods of a driver outside the cluster, whose heartbeat has started."""
    clock = ManualClock(START)
    scheduler = DeterministicScheduler(clock)
    fake = FakeKubernetes(clock=clock)
    running_executor(fake, 1)
    running_executor(fake, 2)
    beat = DriverHeartbeat(
        fake, scheduler, clock, namespace="default", app_id=APP, lease_name=LEASE, duration=30,
        holder="host/1", registered=lambda: dict(registered),
    )  # fmt: skip
    beat.start()
    return fake, beat, scheduler


def test_each_renewal_writes_the_registered_executors_in_the_same_patch() -> None:
    registered: dict[str, float] = {}
    fake, beat, scheduler = client_mode_app(registered)
    registered["1"] = START + 3
    scheduler.advance(10)  # one renewal
    assert beat.renewals == 1
    assert len(fake.calls_of("patch", LEASES)) == 1  # the renewal itself: no request of its own
    annotations = fake.get(LEASES, "default", LEASE)["metadata"]["annotations"]
    assert json.loads(annotations[REGISTERED_EXECUTORS_ANNOTATION]) == {"1": micro_time(START + 3)}
    registered["2"] = START + 12
    scheduler.advance(10)
    annotations = fake.get(LEASES, "default", LEASE)["metadata"]["annotations"]
    assert list(json.loads(annotations[REGISTERED_EXECUTORS_ANNOTATION])) == ["1", "2"]


def test_status_shows_registered_or_not_for_each_running_executor() -> None:
    fake, _, scheduler = client_mode_app({"1": START + 3})
    scheduler.advance(10)
    result = cli(["status", *M, APP], fake, wall_clock=lambda: START + 20)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    header = lines.index(f"Executors of {APP}:") + 1
    assert lines[header].split()[:5] == ["ID", "POD", "NODE", "PHASE", "REGISTERED"]
    assert [r.split()[3:5] for r in lines[header + 1 :]] == [["Running", "yes"], ["Running", "no"]]


def test_wide_and_json_show_when_it_registered_and_as_of_when() -> None:
    fake, _, scheduler = client_mode_app({"1": START + 3})
    scheduler.advance(10)
    wide = cli(["status", *M, APP, "-o", "wide"], fake, wall_clock=lambda: START + 20)
    assert "REGISTERED AT" in wide.out and "2027-01-15T08:00:03.000Z" in wide.out  # as status() writes times
    result = cli(["status", *M, APP, "-o", "json"], fake, wall_clock=lambda: START + 20)
    [app] = json.loads(result.out)["applications"]
    assert app["registrationsAsOf"] == iso_time(START + 10)
    by_id = {e["id"]: e for e in app["executors"]}
    assert (by_id["1"]["registered"], by_id["1"]["registeredAt"]) == (True, iso_time(START + 3))
    assert (by_id["2"]["registered"], by_id["2"]["registeredAt"]) == (False, None)


def test_without_the_lease_registration_is_unknown_not_an_error() -> None:
    fake, beat, _ = client_mode_app({})
    beat.delete()
    result = cli(["status", *M, APP, "-o", "json"], fake, wall_clock=lambda: START + 20)
    assert result.code == 0, result.err
    [app] = json.loads(result.out)["applications"]
    assert app["registrationsAsOf"] is None
    assert {e["registered"] for e in app["executors"]} == {None}


def test_json_gives_each_executors_history_in_the_iso_times_of_status() -> None:
    clock = ManualClock(START)
    fake = FakeKubernetes(clock=clock)
    labels = {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-id": "1"}
    spec = {"containers": [{"name": CONTAINER, "image": "i"}]}
    fake.create(PODS, "default", {"metadata": {"name": "pi-exec-1", "labels": labels}, "spec": spec})
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(START + 1)}
    running = {"running": {"startedAt": rfc3339(START + 2)}}
    statuses = [{"name": CONTAINER, "state": running, "restartCount": 0}]
    status = {"phase": "Running", "conditions": [scheduled], "containerStatuses": statuses}
    fake.patch_status(PODS, "default", "pi-exec-1", status)
    scheduler = DeterministicScheduler(clock)
    beat = DriverHeartbeat(
        fake, scheduler, clock, namespace="default", app_id=APP, lease_name=LEASE, duration=30,
        holder="host/1", registered=lambda: {"1": START + 3},
    )  # fmt: skip
    beat.start()
    scheduler.advance(10)
    result = cli(["status", *M, APP, "-o", "json"], fake, wall_clock=lambda: START + 20)
    [app] = json.loads(result.out)["applications"]
    [executor] = app["executors"]
    assert [(h["state"], h["from"], h["to"]) for h in executor["history"]] == [
        ("requested", iso_time(START), iso_time(START + 1)),
        ("pending", iso_time(START + 1), iso_time(START + 2)),
        ("running", iso_time(START + 2), iso_time(START + 3)),
        ("registered", iso_time(START + 3), None),  # the current state has no end yet
    ]
