"""Avoid failing nodes through the whole backend (in-memory API, manual clock): after the threshold of
node failures, new executor pods carry a node anti-affinity against the node, status() lists it, and the
anti-affinity goes once the window expires; off by default."""

from __future__ import annotations

from typing import Any

from backend_harness import Harness, make_harness

from k8s_backend.kube.port import PODS


def end(h: Harness, name: str, code: int) -> None:
    terminated = {"exitCode": code, "reason": "Error"}
    container = {
        "name": "spark-kubernetes-executor",
        "image": "spark:4.3.0",
        "state": {"terminated": terminated},
    }
    h.fake.patch_status(PODS, "default", name, {"phase": "Failed", "containerStatuses": [container]})


def excluded(pod: dict[str, Any]) -> list[str]:
    affinity = pod["spec"].get("affinity", {}).get("nodeAffinity", {})
    terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
    return [v for t in terms for f in t.get("matchFields", []) for v in f["values"]]


def started(conf: dict[str, str]) -> Harness:
    h = make_harness({"spark.executor.instances": "3", "spark.executor.maxNumFailures": "100", **conf})
    h.backend.start()
    h.run()
    for p in h.executor_pods():
        h.fake.bind("default", p["metadata"]["name"], "n1")
        h.set_phase(p["metadata"]["name"], "Running")
    h.run(2.0)
    return h


def test_a_node_with_failures_over_the_threshold_is_avoided_until_the_window_expires() -> None:
    h = started(
        {
            "spark.kubernetes.executor.nodeFailures.threshold": "2",
            "spark.kubernetes.executor.nodeFailures.window": "60s",
        }
    )
    names = sorted(p["metadata"]["name"] for p in h.executor_pods())
    end(h, names[0], 1)  # the application's own failure: not counted against the node
    end(h, names[1], 143)
    h.run(2.0)
    assert all(excluded(p) == [] for p in h.executor_pods())
    end(h, names[2], 137)
    h.run(2.0)
    newest = max(h.executor_pods(), key=lambda p: int(p["metadata"]["labels"]["spark-exec-id"]))
    assert excluded(newest) == ["n1"]
    avoided = h.backend.status()["allocator"]["avoided_nodes"]
    assert [(a["node"], a["failures"]) for a in avoided] == [("n1", 2)] and "signal 9" in avoided[0]["why"]
    h.run(60.0)
    assert h.backend.status()["allocator"]["avoided_nodes"] == []


def test_off_by_default() -> None:
    h = started({})
    for name in sorted(p["metadata"]["name"] for p in h.executor_pods()):
        end(h, name, 143)
    h.run(3.0)
    assert all(excluded(p) == [] for p in h.executor_pods())
    assert h.backend.status()["allocator"]["avoided_nodes"] is None
