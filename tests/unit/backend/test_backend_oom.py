"""OOM-aware replacements through the whole backend (in-memory API, manual clock): an OOM-killed
executor's replacement gets a raised memory overhead (the heap unchanged); the loss reason, status() and
the log say so; other failures raise nothing; off by default."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from backend_harness import Harness, make_harness

from k8s_backend.kube.port import PODS

ON = {
    "spark.kubernetes.executor.oom.overheadFactor": "1.5",
    "spark.kubernetes.executor.oom.maxOverheadFactor": "2",
    "spark.executor.instances": "2",
}


def memory_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["resources"]["limits"]["memory"])


def end(h: Harness, name: str, code: int, reason: str) -> None:
    terminated = {"exitCode": code, "reason": reason}
    container = {
        "name": "spark-kubernetes-executor",
        "image": "spark:4.3.0",
        "state": {"terminated": terminated},
    }
    h.fake.patch_status(PODS, "default", name, {"phase": "Failed", "containerStatuses": [container]})


def newest(h: Harness) -> dict[str, Any]:
    return max(h.executor_pods(), key=lambda p: int(p["metadata"]["labels"]["spark-exec-id"]))


def started(conf: dict[str, str]) -> Harness:
    h = make_harness(conf)
    h.backend.start()
    h.run()
    for p in h.executor_pods():
        h.set_phase(p["metadata"]["name"], "Running")
    h.run(2.0)
    return h


def test_an_oom_killed_executors_replacement_gets_more_overhead_up_to_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = started(ON)
    first = sorted(p["metadata"]["name"] for p in h.executor_pods())
    assert {memory_of(p) for p in h.executor_pods()} == {"1408Mi"}  # 1 GiB heap + 384 MiB overhead
    with caplog.at_level(logging.WARNING):
        end(h, first[0], 137, "OOMKilled")
        h.run(3.0)
    replacement = newest(h)
    assert replacement["metadata"]["labels"]["spark-exec-id"] == "3"
    assert memory_of(replacement) == "1600Mi", "overhead 384 -> 576 MiB"
    env = {e["name"]: e.get("value") for e in replacement["spec"]["containers"][0].get("env", [])}
    assert env.get("SPARK_EXECUTOR_MEMORY") == "1024m", "the heap stays as configured"
    assert any("raised from 384 MiB to 576 MiB" in r.getMessage() for r in caplog.records)
    loss = next(loss for i, loss in h.driver.removed if i == "1")
    assert "raised from 384 MiB to 576 MiB" in loss.message and loss.message.startswith("OOMKilled")
    status = h.backend.status()
    assert status["oom"]["profiles"] == {"0": {"ooms": 1, "factor": 1.5}}
    assert "576 MiB" in status["recent_losses"][-1]["reason"]
    # A second OOM: x2.25 is bounded at x2.
    end(h, first[1], 137, "OOMKilled")
    h.run(3.0)
    assert memory_of(newest(h)) == "1792Mi"


def test_other_failures_raise_nothing_and_it_is_off_by_default() -> None:
    h = started(ON)
    end(h, sorted(p["metadata"]["name"] for p in h.executor_pods())[0], 137, "Error")
    h.run(3.0)
    assert memory_of(newest(h)) == "1408Mi"
    off = started({"spark.executor.instances": "2"})
    end(off, sorted(p["metadata"]["name"] for p in off.executor_pods())[0], 137, "OOMKilled")
    off.run(3.0)
    assert memory_of(newest(off)) == "1408Mi" and off.backend.status()["oom"] is None
