"""Decommission on notice, through the whole backend on the in-memory API, a manual clock and a
deterministic scheduler: a drained node's executors are decommissioned via the driver and replaced before
their pods end; an evicted pod's DisruptionTarget condition does the same; a driver that may not read
nodes gets one warning and still acts on pod conditions."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.kube.port import NODES, PODS


def add_node(h: Harness, name: str, **spec: Any) -> None:
    h.fake.create(NODES, None, {"metadata": {"name": name}, "spec": spec})


def run_on(h: Harness, pod_name: str, node: str) -> None:
    h.fake.bind("default", pod_name, node)
    h.set_phase(pod_name, "Running")


def started(conf: dict[str, str] | None = None) -> tuple[Harness, list[str]]:
    h = make_harness({"spark.kubernetes.executor.disruption.nodeCheckInterval": "1s", **(conf or {})})
    add_node(h, "n1")
    add_node(h, "n2")
    h.backend.start()
    h.run()
    names = sorted(p["metadata"]["name"] for p in h.executor_pods())
    assert len(names) == 3
    for name, node in zip(names, ["n1", "n1", "n2"], strict=True):
        run_on(h, name, node)
    for executor_id in ("1", "2", "3"):
        h.driver.registered[executor_id] = 0.0
    h.run(2.0)
    return h, names


def test_a_cordoned_nodes_executors_are_decommissioned_and_replaced_before_their_pods_end() -> None:
    h, names = started({"spark.kubernetes.executor.decommissionLabel": "decommissioning"})
    assert h.driver.decommissioned == []
    h.fake.patch(NODES, None, "n1", {"spec": {"unschedulable": True}})
    h.run(2.0)
    assert sorted(i for i, _ in h.driver.decommissioned) == ["1", "2"]
    assert all("n1 is cordoned" in reason for _, reason in h.driver.decommissioned)
    pods = {p["metadata"]["name"]: p for p in h.executor_pods()}
    assert len(pods) == 5, "two replacements requested while the drained executors still run"
    assert all(pods[n]["status"]["phase"] == "Running" for n in names)
    labelled = sorted(n for n, p in pods.items() if "decommissioning" in p["metadata"]["labels"])
    assert labelled == names[:2]
    status = h.backend.status()["disruptions"]
    assert status["noticed"] == 2 and status["departing"] == [1, 2] and status["nodes"] == "read"
    assert [r["node"] for r in status["recent"]] == ["n1", "n1"]
    # Nothing more happens on later rounds: each executor is decommissioned once, replaced once.
    h.run(5.0)
    assert len(h.driver.decommissioned) == 2 and len(h.executor_pods()) == 5
    # The drained pods end: their ends are neither failures nor reasons for more pods.
    for name in names[:2]:
        h.set_phase(name, "Failed", exit_code=143)
    h.run(5.0)
    assert h.backend.status()["allocator"]["failures"] == 0
    assert len([p for p in h.executor_pods() if p["status"].get("phase") != "Failed"]) == 3


def test_a_pod_that_lands_on_a_node_cordoned_earlier_is_noticed_when_it_changes() -> None:
    # After the cordon was seen, only pods that change are read again (the nodes did not): a new
    # executor scheduled onto that node is one of them.
    h, names = started()
    add_node(h, "n3", unschedulable=True)
    h.run(2.0)
    assert h.driver.decommissioned == []
    h.backend.request_total_executors({0: 4})
    h.run(2.0)
    (new,) = [p["metadata"]["name"] for p in h.executor_pods() if p["metadata"]["name"] not in names]
    run_on(h, new, "n3")  # as a scheduler ignoring the cordon would (a DaemonSet-like toleration)
    h.run(2.0)
    assert [i for i, _ in h.driver.decommissioned] == ["4"]
    assert "n3 is cordoned" in h.driver.decommissioned[0][1]


def test_an_evicted_pods_disruption_target_condition_is_acted_on() -> None:
    h, names = started()
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "message": "m"}
        ],
        "containerStatuses": [
            {"name": "spark-kubernetes-executor", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
        ],
    }
    h.fake.patch_status(PODS, "default", names[2], status)
    h.run(2.0)
    assert [i for i, _ in h.driver.decommissioned] == ["3"]
    assert "EvictionByEvictionAPI" in h.driver.decommissioned[0][1]
    assert len(h.executor_pods()) == 4


def test_off_nothing_is_decommissioned_and_nodes_are_never_read() -> None:
    h, _ = started({"spark.kubernetes.executor.disruption.decommissionOnNotice": "false"})
    h.fake.patch(NODES, None, "n1", {"spec": {"unschedulable": True}})
    h.run(3.0)
    assert h.driver.decommissioned == [] and len(h.executor_pods()) == 3
    assert not [c for c in h.fake.calls if c.resource_plural == "nodes" and c.verb == "list"]
    assert h.backend.status()["disruptions"] is None


def test_forbidden_nodes_give_one_warning_and_pod_conditions_still_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = make_harness({"spark.kubernetes.executor.disruption.nodeCheckInterval": "1s"})
    h.fake.fail_for(1e9, "list", NODES, status=403, message='nodes is forbidden: User "x" cannot list nodes')
    with caplog.at_level(logging.WARNING):
        h.backend.start()
        h.run(10.0)
    warnings = [r for r in caplog.records if "Cannot read nodes" in r.getMessage()]
    assert len(warnings) == 1
    assert "list on nodes" in warnings[0].getMessage()
    assert len([c for c in h.fake.calls if c.resource_plural == "nodes" and c.verb == "list"]) == 1
    assert h.backend.status()["disruptions"]["nodes"] == "forbidden"
