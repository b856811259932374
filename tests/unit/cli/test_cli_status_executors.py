"""``k8s-backend status ID``: one row per executor (node, phase, age, last reason, exit code with its
meaning), ``-o wide|json``, and ``-w``, which shows it again whenever something changed."""

from __future__ import annotations

import json
from html import unescape
from typing import Any

from cli_support import Wrapped, cli

from k8s_backend.kube.port import EVENTS, PODS, ForbiddenError, Resource
from k8s_backend.pods.objects import owner_reference
from k8s_backend.testing import FakeKubernetes

APP = "spark-" + "5" * 32
M = ["--master", "pyk8s://https://k8s.test:6443"]
NOW = 1_800_000_000.0
CONTAINER = "spark-kubernetes-executor"


def executor(fake: FakeKubernetes, executor_id: int, driver: Any, status: dict[str, Any] | None) -> None:
    name = f"pi-exec-{executor_id}"
    labels = {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-id": str(executor_id)}
    meta = {"name": name, "labels": labels, "ownerReferences": [owner_reference(driver)]}
    spec = {"containers": [{"name": CONTAINER, "image": "i", "resources": {"limits": {"memory": "1Gi"}}}]}
    fake.create(PODS, "default", {"metadata": meta, "spec": spec})
    if status is not None:
        fake.patch_status(PODS, "default", name, status)


def ended(code: int, reason: str) -> dict[str, Any]:
    state = {"terminated": {"exitCode": code, "reason": reason}}
    return {"phase": "Failed", "containerStatuses": [{"name": CONTAINER, "state": state, "restartCount": 0}]}


def scenario() -> FakeKubernetes:
    fake = FakeKubernetes()
    labels = {"spark-app-selector": APP, "spark-role": "driver", "spark-app-name": "pi"}
    spec = {"containers": [{"name": "d", "image": "i"}]}
    body = {"metadata": {"name": "pi-driver", "labels": labels}, "spec": spec}
    driver = fake.create(PODS, "default", body)
    fake.patch_status(PODS, "default", "pi-driver", {"phase": "Running"})
    statuses = [{"name": CONTAINER, "state": {"running": {}}, "restartCount": 0}]
    running = {"phase": "Running", "podIP": "10.0.0.7", "containerStatuses": statuses}
    executor(fake, 1, driver, running)
    fake.bind("default", "pi-exec-1", "node-a")
    unschedulable = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient memory.",
            }
        ],
    }
    executor(fake, 2, driver, unschedulable)
    executor(fake, 10, driver, ended(137, "OOMKilled"))
    return fake


def test_one_row_per_executor_in_id_order_with_reasons_and_exit_codes() -> None:
    result = cli(["status", *M, "pi-driver"], scenario(), wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    header = lines.index(f"Executors of {APP}:") + 1
    assert lines[header].split() == ["ID", "POD", "NODE", "PHASE", "REGISTERED", "AGE", "REASON", "EXIT"]
    rows = lines[header + 1 :]
    assert [r.split()[0] for r in rows] == ["1", "2", "10"]  # numerically, not as text
    assert rows[0].split()[1:5] == ["pi-exec-1", "node-a", "Running", "-"]  # no heartbeat: unknown
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient memory." in rows[1]
    assert "OOMKilled" in rows[2] and "137 (SIGKILL, possible container OOM)" in rows[2]


def test_wide_adds_the_ip_the_restarts_and_what_went_wrong() -> None:
    result = cli(["status", *M, "pi-driver", "-o", "wide"], scenario(), wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    assert "IP" in result.out and "RESTARTS" in result.out and "10.0.0.7" in result.out
    assert "OOMKilled: the executor exceeded its memory limit of 1Gi" in result.out


def test_json_holds_the_driver_and_every_executor() -> None:
    result = cli(["status", *M, APP, "-o", "json"], scenario(), wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    [app] = json.loads(result.out)["applications"]
    assert (app["applicationId"], app["submissionId"]) == (APP, "default:pi-driver")
    assert app["driver"]["phase"] == "Running"
    by_id = {e["id"]: e for e in app["executors"]}
    assert by_id["1"]["node"] == "node-a" and by_id["1"]["exitCode"] is None
    assert by_id["2"]["reason"].startswith("Unschedulable")
    assert (by_id["10"]["exitCode"], by_id["10"]["reason"]) == (137, "OOMKilled")


def test_watch_shows_it_again_only_when_something_changed_until_ctrl_c() -> None:
    fake = scenario()
    looks = 0

    def sleep(_: float) -> None:
        nonlocal looks
        looks += 1
        if looks == 2:  # something happens between the second and third look
            fake.patch_status(PODS, "default", "pi-exec-2", ended(1, "Error"))
        if looks == 4:
            raise KeyboardInterrupt

    clock = iter(NOW + i for i in range(100))  # ages change on every look: not news on their own
    result = cli(["status", *M, "pi-driver", "-w"], fake, sleep=sleep, wall_clock=lambda: next(clock))
    assert result.code == 0, result.err
    assert result.out.count(f"Executors of {APP}:") == 2
    assert "1 (generic, look at logs to clarify)" in result.out.split(f"Executors of {APP}:")[-1]


def test_timeline_writes_a_self_contained_page_of_the_executors(tmp_path: Any) -> None:
    page = tmp_path / "timeline.html"
    result = cli(["status", *M, "pi-driver", "--timeline", str(page)], scenario(), wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    assert f"Wrote the executor timeline to {page}" in result.err
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    for executor_id in ("1", "2", "10"):
        assert f">exec {executor_id}<" in html
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient memory." in html
    assert "137 (SIGKILL, possible container OOM), OOMKilled" in html
    # This driver publishes nothing: the page says what it therefore cannot show.
    text = unescape(html)
    assert "Registration with the driver is not known, so no row has a registered span" in text
    assert "The target over time and the markers for kills, decommissions and API errors are not" in text
    assert "drawn from their pods' Kubernetes Events (here: none)" in text


class NoEvents(Wrapped):
    def list(self, resource: Resource, namespace: str | None, **kwargs: Any) -> Any:
        if resource == EVENTS:
            raise ForbiddenError('events is forbidden: cannot list resource "events"')
        return self.inner.list(resource, namespace, **kwargs)


def test_timeline_without_permission_to_list_events_says_deleted_executors_are_left_out(
    tmp_path: Any,
) -> None:
    page = tmp_path / "timeline.html"
    api = NoEvents(scenario())
    result = cli(["status", *M, "pi-driver", "--timeline", str(page)], api, wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    text = unescape(page.read_text())
    assert ">exec 1<" in text
    assert "the namespace's Events could not be read (403 Forbidden; `list events` is needed)" in text


def test_timeline_of_several_applications_is_refused() -> None:
    result = cli(["status", *M, "pi-driver", APP, "--timeline", "/tmp/x.html"], scenario())
    assert result.code == 2 and "--timeline writes one application's timeline" in result.err
