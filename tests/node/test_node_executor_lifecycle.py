"""Executor lifecycles on the real node with the real executor JVM, through k8s_backend's backend (a
PySpark driver per scenario, in a fresh Python process; node_lifecycle_support.py):

- an executor over its memory limit is OOM-killed by the kernel (exit 137, ``OOMKilled``), the loss
  reason says so, and its replacement gets the raised memory overhead of OOM-aware replacements;
- graceful decommission: by the driver (``decommission_executors``) the executor logs Spark's
  decommission, exits 0 and its pod ends Succeeded, as under Spark's own backend; by pod deletion, the
  preStop /opt/decom.sh asks the JVM to decommission (SIGPWR) before the kubelet's SIGTERM;
- pod deletion with a grace period delivers SIGTERM through tini to the JVM, which exits (143) within it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.quantity import memory_bytes
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

SUPPORT = Path(__file__).with_name("node_lifecycle_support.py")
MIB = 1 << 20
SQUARES = sum(x * x for x in range(1000))


def run_scenario(name: str, cluster: LocalCluster, tmp_path: Path) -> dict[str, Any]:
    """Run a scenario's driver; its observations (the process's output on failure)."""
    cluster_file = tmp_path / "cluster.json"
    info = {
        "url": cluster.url, "token": cluster.token, "ca": str(cluster.ca_cert), "master": cluster.master,
        "conf": cluster.spark_conf(), "pod_logs": str(cluster.node.work_dir / "pod-logs"),
    }  # fmt: skip
    cluster_file.write_text(json.dumps(info))
    out = tmp_path / f"{name}.json"
    # The executors' Python workers run the image's python3 (3.11, as this driver's: PySpark requires it).
    env = {**os.environ, "PYSPARK_PYTHON": "python3", "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("KUBECONFIG", None)  # the cluster's own credentials only
    proc = subprocess.run(
        [sys.executable, str(SUPPORT), name, str(out), str(cluster_file)], env=env, capture_output=True,
        text=True, timeout=800, check=False,
    )  # fmt: skip
    seen: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    brief = {k: v for k, v in seen.items() if k not in ("first", "replacement", "by_driver", "by_deletion")}
    assert proc.returncode == 0, f"{json.dumps(brief, indent=1)[-3000:]}\n{proc.stderr[-5000:]}"
    return seen


def loss_of(seen: dict[str, Any], executor_id: int) -> dict[str, Any]:
    losses = [loss for loss in seen["status"]["recent_losses"] if loss["executor_id"] == executor_id]
    assert losses, seen["status"]["recent_losses"]
    return dict(losses[-1])


def instant(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def ended_within_grace(pod: dict[str, Any], grace: int) -> timedelta:
    """How long after the deletion request the container ended (the pod's first deletion timestamp is the
    request's time plus its grace period); asserted to be before the grace period's SIGKILL."""
    deadline, asked_grace = pod["deletion_asked"]
    assert asked_grace == grace
    requested = instant(deadline) - timedelta(seconds=grace)
    elapsed = instant(pod["terminated"]["finishedAt"]) - requested
    assert elapsed < timedelta(seconds=grace), (elapsed, pod["deletion_asked"], pod["terminated"])
    return elapsed


def test_an_executor_over_its_memory_limit_is_oom_killed_and_replaced_with_more_overhead(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    seen = run_scenario("oom", node_cluster, tmp_path)
    assert seen["registered"]
    # The task's first attempt took its executor down; its retry ran on the replacement.
    assert seen.get("answer") == [400, 1, 2, 3], seen.get("error")
    assert seen["failed_tasks"] >= 1
    first, replacement = seen["first"], seen["replacement"]
    assert (first["terminated"]["reason"], first["terminated"]["exitCode"]) == ("OOMKilled", 137), first
    assert first["phase"] == "Failed" and first["deleted"]
    # 512 MiB heap + 384 MiB overhead; the replacement's overhead x3 (the keys' factor and bound).
    assert memory_bytes(first["memory_limit"]) == (512 + 384) * MIB
    assert memory_bytes(replacement["memory_limit"]) == (512 + 3 * 384) * MIB
    assert seen["replaced"] and replacement["phase"] == "Running"
    loss = loss_of(seen, 1)
    assert loss["exit_code"] == 137 and loss["exit_caused_by_app"], loss
    assert loss["reason"].startswith("OOMKilled: the executor exceeded its memory limit of"), loss
    assert "raised from 384 MiB to 1152 MiB (x3 after 1 OOM kill)" in loss["reason"], loss
    assert "OOMKilled" in seen["removed"]["1"] and "1152 MiB" in seen["removed"]["1"], seen["removed"]
    oom = seen["status"]["oom"]
    assert oom["profiles"] == {"0": {"ooms": 1, "factor": 3.0}}, oom
    raises = [(r["executor_id"], r["base_overhead_mib"], r["overhead_mib"]) for r in oom["recent"]]
    assert raises == [(1, 384, 1152)], oom
    assert seen["second_answer"] == SQUARES


def test_without_oom_aware_replacements_the_retry_is_oom_killed_again(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    """The comparison's "off" (the keys' default, as Spark): the replacement has the same limit, so the
    task's retry is OOM-killed there too and the job fails (spark.task.maxFailures=2 in both runs)."""
    seen = run_scenario("oom-off", node_cluster, tmp_path)
    assert seen["registered"] and "answer" not in seen, seen.get("answer")
    assert "failed 2 times" in seen["error"], seen["error"]
    first, replacement = seen["first"], seen["replacement"]
    for pod in (first, replacement):
        assert (pod["terminated"]["reason"], pod["terminated"]["exitCode"]) == ("OOMKilled", 137), pod
        assert memory_bytes(pod["memory_limit"]) == (512 + 384) * MIB  # nothing raised
    assert loss_of(seen, 1)["exit_code"] == 137 and "raised from" not in loss_of(seen, 1)["reason"]
    assert seen["status"]["oom"] is None  # off: status() has no OOM-aware section


def test_graceful_decommission_by_the_driver_and_by_pod_deletion_through_decom_sh(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    seen = run_scenario("decommission", node_cluster, tmp_path)
    assert seen["registered"] and seen["answer"] == SQUARES and seen["logs_kept"]
    # By the driver: the backend labelled the pod; Spark told the executor, which decommissioned (no
    # blocks to migrate), exited 0 and its pod ended Succeeded; the backend then deleted it, as Spark's.
    by_driver = seen["by_driver"]
    assert "spark-decommissioning" in by_driver["labels_seen"], by_driver["labels_seen"]
    assert (by_driver["terminated"]["exitCode"], by_driver["terminated"]["reason"]) == (0, "Completed")
    assert by_driver["phase"] == "Succeeded" and by_driver["deleted"]
    assert "Decommission executor 1." in by_driver["log"], by_driver["log"][-3000:]
    assert "No running tasks, no block migration configured, stopping." in by_driver["log"]
    # The executor left by itself: the kubelet ran no preStop hook (decom.sh writes the termination log).
    assert not by_driver["terminated"].get("message"), by_driver["terminated"]
    assert "1" in seen["removed"]
    # By deletion (a drain's eviction): the preStop /opt/decom.sh sent SIGPWR, the JVM decommissioned and
    # exited 0 before the kubelet's SIGTERM, well within the grace period.
    by_deletion = seen["by_deletion"]
    assert by_deletion["pre_stop"] == {"command": ["/opt/decom.sh"]}
    assert "Decommission executor 2." in by_deletion["log"], by_deletion["log"][-3000:]
    assert by_deletion["terminated"]["exitCode"] == 0, by_deletion["terminated"]
    assert by_deletion["terminated"].get("message"), by_deletion["terminated"]  # decom.sh's date
    ended_within_grace(by_deletion, 60)
    # The executor told the driver it was decommissioning (Spark's path for its SIGPWR).
    assert seen["removed"]["2"] == "Executor decommission: Executor 2 is decommissioned.", seen["removed"]
    assert by_deletion["deleted"]
    assert seen["replaced"] and seen["second_answer"] == SQUARES


def test_pod_deletion_with_a_grace_period_sends_sigterm_through_tini_to_the_executor_jvm(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    seen = run_scenario("sigterm", node_cluster, tmp_path)
    assert seen["registered"] and seen["answer"] == SQUARES and seen["log_kept"]
    pod = seen["by_deletion"]
    assert pod["pre_stop"] is None
    assert "RECEIVED SIGNAL TERM" in pod["log"], pod["log"][-3000:]
    # The JVM's own exit on SIGTERM (128 + 15) through tini, not the grace period's SIGKILL (137).
    assert pod["terminated"]["exitCode"] == 143, pod["terminated"]
    ended_within_grace(pod, 30)
    loss = loss_of(seen, 1)
    assert loss["exit_code"] == 143, loss
    assert seen["replaced"] and "1" in seen["removed"] and seen["second_answer"] == SQUARES
