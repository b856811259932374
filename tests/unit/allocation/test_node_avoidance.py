"""Avoid failing nodes, the pure part: which failures are the node's, the window, and the anti-affinity."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_backend.allocation.node_avoidance import NodeFailures, anti_affinity, node_failure
from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.states import ExecutorPodState, PodStateRules

RULES = PodStateRules()
CONTAINER = "spark-kubernetes-executor"
WINDOW = 600.0


def failed(
    exec_id: int, node: str, code: int, reason: str = "Error", pod_reason: str | None = None
) -> ExecutorPodState:
    status: dict[str, Any] = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": CONTAINER, "state": {"terminated": {"exitCode": code, "reason": reason}}}
        ],
    }
    if pod_reason is not None:
        status["reason"] = pod_reason
    pod: Obj = {
        "metadata": {
            "name": f"e-{exec_id}",
            "labels": {"spark-role": "executor", "spark-exec-id": str(exec_id)},
        },
        "spec": {"nodeName": node},
        "status": status,
    }
    state = RULES.to_state(pod)
    assert state is not None
    return state


@pytest.mark.parametrize(
    ("code", "reason", "pod_reason", "expected"),
    [
        (143, "Error", None, "signal 15"),
        (137, "Error", None, "signal 9"),
        (137, "OOMKilled", None, None),  # the application's memory use
        (1, "Error", None, None),  # the executor exited by itself
        (50, "Error", None, None),
        (0, "Error", "Evicted", "pod Evicted"),
        (128, "ContainerCannotRun", None, "container ContainerCannotRun"),
    ],
)
def test_which_failures_are_the_nodes(
    code: int, reason: str, pod_reason: str | None, expected: str | None
) -> None:
    why = node_failure(failed(1, "n1", code, reason, pod_reason), CONTAINER)
    assert (why is None) if expected is None else (why is not None and expected in why)


def test_a_node_is_avoided_from_the_threshold_until_its_failures_leave_the_window() -> None:
    f = NodeFailures().record([failed(1, "n1", 143)], 0.0, container_name=CONTAINER, window=WINDOW)
    f = f.record([failed(2, "n1", 137), failed(3, "n2", 143)], 100.0, container_name=CONTAINER, window=WINDOW)
    assert f.avoided(100.0, threshold=3, window=WINDOW) == ()
    f = f.record([failed(4, "n1", 143), failed(4, "n1", 143)], 200.0, container_name=CONTAINER, window=WINDOW)
    avoided = f.avoided(200.0, threshold=3, window=WINDOW)
    assert [(a.node, a.failures, a.until) for a in avoided] == [("n1", 3, 600.0)]
    assert f.avoided(599.0, threshold=3, window=WINDOW) != ()
    assert f.avoided(600.0, threshold=3, window=WINDOW) == (), "the first failure left the window"
    assert NodeFailures().avoided(0.0, threshold=0, window=WINDOW) == ()


def test_app_failures_never_count_and_each_executor_counts_once() -> None:
    f = NodeFailures().record([failed(1, "n1", 1)] * 3, 0.0, container_name=CONTAINER, window=WINDOW)
    assert f.failures == {} and f.avoided(0.0, threshold=1, window=WINDOW) == ()


def test_the_anti_affinity_is_added_to_every_term_of_the_pods_own() -> None:
    own = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    pod: Obj = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [own]}
                }
            }
        }
    }
    anti_affinity(pod, ["n2", "n1"])
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms[0]["matchFields"] == [{"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]}]
    assert terms[0]["matchExpressions"] == own["matchExpressions"]
    bare: Obj = {"spec": {}}
    anti_affinity(bare, ["n1"])
    assert (
        len(
            bare["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"
            ]
        )
        == 1
    )
