"""Less common kubelet paths: forced deletion, start errors, idle sidecars, foreign nodes, lost watches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_support import (
    ReadySignal,
    container_state,
    history,
    pod_or_none,
    python_pod,
    wait_gone,
    wait_phase,
)

from k8s_backend.kube.port import PODS
from k8s_backend.local.kubelet import ProcessKubelet
from k8s_backend.testing import FakeKubernetes

IGNORE_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)"


@pytest.fixture
def ready(tmp_path: Path) -> Iterator[ReadySignal]:
    signal_ = ReadySignal(tmp_path)
    yield signal_
    signal_.close()


def test_a_forced_second_deletion_kills_at_once(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    fake.create(PODS, "default", python_pod("slow", ready.code(IGNORE_TERM)))
    ready.wait()
    since = fake.resource_version
    fake.delete(PODS, "default", "slow", grace_period_seconds=600)
    assert kubelet.wait_until(
        lambda: bool((pod_or_none(fake, "slow") or {})["metadata"].get("deletionTimestamp"))
    )
    fake.delete(PODS, "default", "slow", grace_period_seconds=0)
    wait_gone(kubelet, fake, "slow")
    assert kubelet.wait_until(lambda: kubelet.processes() == [], 20)
    assert history(fake, since, "slow")[-1][0] == "DELETED"


def test_an_executor_container_that_cannot_start_fails_the_pod(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    pod = {
        "metadata": {"name": "broken-exec"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "spark-kubernetes-executor", "image": "apache/spark", "args": ["executor"]}
            ],
        },
    }
    fake.create(PODS, "default", pod)
    wait_phase(kubelet, fake, "broken-exec", "Failed")
    terminated = container_state(fake, "broken-exec")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert "SPARK_EXECUTOR_MEMORY" in terminated["message"] or "Java" in terminated["message"]


def test_a_sidecar_with_no_local_command_just_runs(fake: FakeKubernetes, kubelet: ProcessKubelet) -> None:
    pod = python_pod("with-sidecar", "pass")
    pod["spec"]["containers"].append({"name": "proxy", "image": "envoyproxy/envoy:v1.30"})
    fake.create(PODS, "default", pod)
    # The main container completes; the sidecar keeps the pod Running, as on a real node.
    assert kubelet.wait_until(lambda: "terminated" in container_state(fake, "with-sidecar", 0))
    assert "running" in container_state(fake, "with-sidecar", 1)
    assert fake.get(PODS, "default", "with-sidecar")["status"]["phase"] == "Running"
    fake.delete(PODS, "default", "with-sidecar", grace_period_seconds=30)
    wait_gone(kubelet, fake, "with-sidecar")


def test_pods_bound_to_other_nodes_are_left_alone(fake: FakeKubernetes, kubelet: ProcessKubelet) -> None:
    fake.create(PODS, "default", python_pod("elsewhere", "pass", nodeName="node-99"))
    fake.create(PODS, "default", python_pod("here", "pass"))
    wait_phase(kubelet, fake, "here", "Succeeded")
    assert fake.get(PODS, "default", "elsewhere")["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_the_kubelet_keeps_watching_after_its_watch_is_dropped(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", python_pod("before", "pass"))
    wait_phase(kubelet, fake, "before", "Succeeded")
    fake.drop_watches()
    fake.compact()
    fake.create(PODS, "default", python_pod("after", "pass"))
    wait_phase(kubelet, fake, "after", "Succeeded")
