"""The pod status the kubelet reports from its records (pure)."""

from __future__ import annotations

from typing import Any

from k8s_backend.local.kubelet.podstate import PodRecord, qos_class, timestamp

Obj = dict[str, Any]


def record(*names: str, init: tuple[str, ...] = (), restart_policy: str = "Never") -> PodRecord:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "restartPolicy": restart_policy,
            "containers": [{"name": n, "image": f"img-{n}"} for n in names],
            "initContainers": [{"name": n, "image": "init"} for n in init],
        },
    }
    return PodRecord.from_pod(pod)


def conditions(status: Obj) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in status["conditions"]}


def test_unscheduled_pod_is_pending_with_an_unschedulable_condition() -> None:
    rec = record("a")
    rec.unschedulable = "0/1 nodes are available: 1 Insufficient cpu."
    status = rec.render_status(10.0, pod_ip="127.0.0.1", host_ip="127.0.0.1")
    assert status["phase"] == "Pending"
    assert status["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": timestamp(10.0),
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
        }
    ]
    assert "podIP" not in status and "containerStatuses" not in status


def test_bound_pod_goes_from_container_creating_to_running_to_succeeded() -> None:
    rec = record("a")
    rec.node, rec.start_time = "node-1", 5.0
    creating = rec.render_status(5.0, pod_ip="127.0.0.1", host_ip="10.0.0.1")
    assert creating["phase"] == "Pending"
    assert creating["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert conditions(creating)["PodScheduled"] == ("True", "")
    assert conditions(creating)["Ready"] == ("False", "ContainersNotReady")
    assert (creating["podIP"], creating["hostIP"], creating["startTime"]) == (
        "127.0.0.1",
        "10.0.0.1",
        timestamp(5),
    )

    rec.containers[0].set_running(6.0, "containerd://x")
    running = rec.render_status(6.0, pod_ip="127.0.0.1", host_ip="10.0.0.1")
    assert running["phase"] == "Running"
    entry = running["containerStatuses"][0]
    assert entry["state"] == {"running": {"startedAt": timestamp(6.0)}}
    assert (entry["ready"], entry["started"], entry["containerID"]) == (True, True, "containerd://x")
    assert entry["imageID"].startswith("img-a@sha256:")
    assert conditions(running)["Ready"] == ("True", "")

    rec.containers[0].set_terminated(0, "Completed", 9.0)
    done = rec.render_status(9.0, pod_ip="127.0.0.1", host_ip="10.0.0.1")
    assert done["phase"] == "Succeeded"
    assert done["containerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 0,
        "reason": "Completed",
        "startedAt": timestamp(6.0),
        "finishedAt": timestamp(9.0),
        "containerID": "containerd://x",
    }
    assert conditions(done)["Ready"] == ("False", "PodCompleted")


def test_condition_transition_time_moves_only_when_the_status_flips() -> None:
    rec = record("a")
    rec.node = "n"
    rec.render_status(1.0, pod_ip="i", host_ip="h")
    rec.containers[0].set_running(2.0, "c")
    rec.render_status(2.0, pod_ip="i", host_ip="h")
    later = rec.render_status(50.0, pod_ip="i", host_ip="h")
    times = {c["type"]: c["lastTransitionTime"] for c in later["conditions"]}
    assert times["Ready"] == timestamp(2.0)
    assert times["PodScheduled"] == timestamp(1.0)


def test_one_failed_container_fails_the_pod_once_all_ended() -> None:
    rec = record("a", "b")
    rec.node = "n"
    rec.containers[0].set_running(1, "c1")
    rec.containers[1].set_running(1, "c2")
    rec.containers[0].set_terminated(137, "OOMKilled", 2, signal=9)
    assert rec.phase() == "Running"
    rec.containers[1].set_terminated(0, "Completed", 3)
    status = rec.render_status(3, pod_ip="i", host_ip="h")
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    assert status["containerStatuses"][0]["state"]["terminated"]["signal"] == 9


def test_init_containers_gate_the_pod() -> None:
    rec = record("a", init=("setup",))
    rec.node = "n"
    status = rec.render_status(1, pod_ip="i", host_ip="h")
    assert status["phase"] == "Pending"
    assert conditions(status)["Initialized"] == ("False", "ContainersNotInitialized")
    assert status["initContainerStatuses"][0]["name"] == "setup"
    rec.init_containers[0].set_running(1, "x")
    rec.init_containers[0].set_terminated(1, "Error", 2)
    assert rec.phase() == "Failed"  # restartPolicy Never: a failed init container fails the pod


def test_restarting_container_keeps_the_pod_running() -> None:
    rec = record("a", restart_policy="Always")
    rec.node = "n"
    container = rec.containers[0]
    container.set_running(1, "x")
    container.set_terminated(1, "Error", 2)
    container.last_terminated = container.terminated_state()
    container.restart_count = 1
    container.set_waiting("CrashLoopBackOff", "back-off 10s")
    status = rec.render_status(3, pod_ip="i", host_ip="h")
    assert status["phase"] == "Running"
    entry = status["containerStatuses"][0]
    assert entry["restartCount"] == 1
    assert entry["lastState"]["terminated"]["exitCode"] == 1
    assert entry["state"] == {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}


def test_qos_classes() -> None:
    def pod(*resources: Obj) -> Obj:
        return {"spec": {"containers": [{"name": str(i), "resources": r} for i, r in enumerate(resources)]}}

    both = {"cpu": "1", "memory": "1Gi"}
    assert qos_class(pod({})) == "BestEffort"
    assert qos_class(pod({"limits": both})) == "Guaranteed"
    assert qos_class(pod({"requests": both, "limits": both})) == "Guaranteed"
    # Spark's executors: memory request = limit, CPU request only.
    assert qos_class(pod({"requests": both, "limits": {"memory": "1Gi"}})) == "Burstable"
