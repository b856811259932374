"""The compact pods the store keeps: every field the backend reads survives, the bulk does not, repeated
parts are kept once, and a resync of unchanged pods builds no new state (counted, never timed)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pytest_mock import MockerFixture
from snapshot_pods import SPARK_CONTAINER, executor_pod, terminated_container

from k8s_backend.allocation.pvcs import _claim_names
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.snapshots import store_pods
from k8s_backend.snapshots.states import PodStateRules
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.snapshots.store_pods import SHARED_PARTS_LIMIT, PodCompactor, compact_pod
from k8s_backend.tracking.pod_reasons import container_image, pending_reason

RULES = PodStateRules()
T0 = "2026-01-01T00:00:00Z"


def full_pod(exec_id: int, **kwargs: Any) -> Obj:
    """An executor pod with the bulk a cluster returns: env, mounts, managed fields, IP lists, conditions."""
    pod = executor_pod(exec_id, rv=exec_id, **kwargs)
    pod["metadata"]["managedFields"] = [
        {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}
    ]
    pod["metadata"]["uid"] = f"uid-{exec_id}"
    pod["spec"]["containers"][0].update(
        env=[{"name": "SPARK_EXECUTOR_ID", "value": str(exec_id)}],
        volumeMounts=[{"name": "spark-local-dir-1", "mountPath": "/var/data"}],
        ports=[{"name": "blockmanager", "containerPort": 7079}],
        args=["executor"],
        resources={"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}},
    )
    pod["spec"]["volumes"] = [
        {"name": "spark-local-dir-1", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": f"claim-{exec_id}"}},
    ]
    status = pod["status"]
    status.update(
        hostIP="10.1.0.1", hostIPs=[{"ip": "10.1.0.1"}], podIP="10.0.0.9", podIPs=[{"ip": "10.0.0.9"}]
    )
    status["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0},
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0},
        {"type": "ContainersReady", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0},
    ]
    for container in status.get("containerStatuses") or []:
        container.update(imageID="spark@sha256:" + "a" * 64, containerID="containerd://" + "b" * 64)
    return pod


def unschedulable(exec_id: int) -> Obj:
    pod = full_pod(exec_id, phase="Pending")
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    ]
    return pod


def evicted(exec_id: int) -> Obj:
    pod = full_pod(
        exec_id, phase="Failed", containers=[terminated_container(exit_code=137, reason="OOMKilled")]
    )
    pod["status"].update(reason="Evicted", message="The node was low on resource: memory.")
    return pod


PODS = {
    "running": full_pod(1),
    "deleting": full_pod(2, deleted=True),
    "failed": full_pod(3, phase="Failed", containers=[terminated_container(exit_code=52)]),
    "unschedulable": unschedulable(4),
    "evicted": evicted(5),
    "succeeded": full_pod(6, phase="Succeeded", containers=[terminated_container(exit_code=0)]),
}


@pytest.mark.parametrize("name", sorted(PODS))
def test_every_reading_of_the_backend_is_the_same_on_the_compact_pod(name: str) -> None:
    pod = PODS[name]
    compact = compact_pod(pod)
    original, kept = RULES.to_state(pod), RULES.to_state(compact)
    assert original is not None and kept is not None
    assert (kept.executor_id, kept.phase, kept.name, kept.labels) == (
        original.executor_id, original.phase, original.name, original.labels,
    )  # fmt: skip
    for reading in ("resource_version", "creation_timestamp", "is_being_deleted", "resource_profile_id"):
        assert getattr(kept, reading) == getattr(original, reading), reading
    assert pending_reason(compact) == pending_reason(pod)
    assert container_image(compact, SPARK_CONTAINER) == container_image(pod, SPARK_CONTAINER)
    assert list(_claim_names(compact)) == list(_claim_names(pod)) == [f"claim-{kept.executor_id}"]
    code = explain.exit_code_of(pod, SPARK_CONTAINER)
    assert explain.exit_code_of(compact, SPARK_CONTAINER) == code
    assert explain.exit_message(compact, 7, code, SPARK_CONTAINER) == explain.exit_message(
        pod, 7, code, SPARK_CONTAINER
    )


def test_the_bulk_no_decision_reads_is_dropped_and_the_pod_given_is_unchanged() -> None:
    pod = PODS["running"]
    before = copy.deepcopy(pod)
    compact = compact_pod(pod)
    assert pod == before
    assert "managedFields" not in compact["metadata"]
    assert compact["spec"]["containers"] == [
        {
            "name": SPARK_CONTAINER,
            "image": "spark:4.3.0",
            "resources": pod["spec"]["containers"][0]["resources"],
        }
    ]
    assert "hostIPs" not in compact["status"] and "podIPs" not in compact["status"]
    assert compact["status"]["podIP"] == "10.0.0.9"
    assert all("lastProbeTime" not in c for c in compact["status"]["conditions"])
    kept_types = [c["type"] for c in compact["status"]["conditions"]]
    assert {"Ready", "PodScheduled"} <= set(kept_types)
    assert not {"Initialized", "ContainersReady", "PodReadyToStartContainers"} & set(kept_types)
    assert all("imageID" not in c and "containerID" not in c for c in compact["status"]["containerStatuses"])
    assert len(json.dumps(compact)) < len(json.dumps(pod)) * 0.7


def test_keys_and_known_values_are_one_copy_across_pods() -> None:
    first, second = (compact_pod(json.loads(json.dumps(PODS["running"]))) for _ in range(2))
    assert first == second
    key_1, key_2 = next(iter(first["metadata"])), next(iter(second["metadata"]))
    assert key_1 is key_2
    assert first["status"]["phase"] is second["status"]["phase"]
    # Within one pod, equal times are one string.
    times = [c["lastTransitionTime"] for c in first["status"]["conditions"]]
    assert times[0] is times[1]


def test_a_compactor_keeps_identical_containers_once_and_its_memory_bounded() -> None:
    compactor = PodCompactor()
    one, two = (compactor.compact(full_pod(i)) for i in (1, 2))
    assert one["spec"]["containers"] is two["spec"]["containers"]
    for image in range(SHARED_PARTS_LIMIT + 10):  # more distinct parts than it remembers
        pod = full_pod(3)
        pod["spec"]["containers"][0]["image"] = f"spark:{image}"
        compactor.compact(pod)
    assert len(compactor._parts) <= SHARED_PARTS_LIMIT


SERVER_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300}
    for taint in ("not-ready", "unreachable")
]  # fmt: skip


def server_admitted_pod(exec_id: int, suffix: str) -> Obj:
    """A pod as kube-apiserver returns it: its ServiceAccount admission's token volume, named per pod, and
    its default tolerations."""
    pod = full_pod(exec_id)
    token = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    pod["spec"]["volumes"].append(
        {"name": f"kube-api-access-{suffix}", "projected": {"sources": [token], "defaultMode": 420}}
    )
    pod["spec"]["tolerations"] = copy.deepcopy(SERVER_TOLERATIONS)
    return pod


def test_the_api_servers_token_volume_is_dropped_and_the_claims_kept() -> None:
    pod = server_admitted_pod(1, "njqtr")
    compact = compact_pod(pod)
    assert [v["name"] for v in compact["spec"]["volumes"]] == ["spark-local-dir-1", "data"]
    assert list(_claim_names(compact)) == ["claim-1"]
    assert len(pod["spec"]["volumes"]) == 3  # the pod given is unchanged
    # Only the admission's projected volume goes: a user's volume of that name stays.
    pod["spec"]["volumes"][-1] = {"name": "kube-api-access-mine", "emptyDir": {}}
    assert [v["name"] for v in compact_pod(pod)["spec"]["volumes"]][-1] == "kube-api-access-mine"


def test_the_spec_parts_every_pod_repeats_are_kept_once() -> None:
    """The token volume's random name made every pod's volumes its own copy (9.4 KB per executor on the
    real API server, 4.4 KB without: benchmarks/real_scale.py); the server's tolerations were one each."""
    compactor = PodCompactor()
    one, two = (compactor.compact(server_admitted_pod(1, s)) for s in ("njqtr", "x7k2p"))
    assert one["spec"]["tolerations"] == SERVER_TOLERATIONS
    assert one["spec"]["tolerations"] is two["spec"]["tolerations"]
    pod_1, pod_2 = server_admitted_pod(1, "abcde"), server_admitted_pod(2, "fghij")
    for pod in (pod_1, pod_2):  # the claim is the same name in both: only the token volume differs
        pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"] = "shared"
    assert compactor.compact(pod_1)["spec"]["volumes"] is compactor.compact(pod_2)["spec"]["volumes"]


def test_the_owner_references_every_pod_repeats_are_kept_once() -> None:
    """A client-mode driver's pods are all owned by its heartbeat Lease, a cluster-mode one's by its pod."""
    owner = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "app-heartbeat", "uid": "u-1"}
    compactor = PodCompactor()
    one, two = (executor_pod(n, rv=n) for n in (1, 2))
    for pod in (one, two):
        pod["metadata"]["ownerReferences"] = [json.loads(json.dumps(owner))]  # decoded on its own
    kept_one, kept_two = compactor.compact(one), compactor.compact(two)
    assert kept_one["metadata"]["ownerReferences"] == [owner]
    assert kept_one["metadata"]["ownerReferences"] is kept_two["metadata"]["ownerReferences"]
    assert one["metadata"]["ownerReferences"] is not kept_one["metadata"]["ownerReferences"]


def test_the_store_keeps_compact_pods() -> None:
    scheduler = DeterministicScheduler(ManualClock(0.0))
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)
    store.replace_snapshot([PODS["failed"]])
    store.update_pod(PODS["running"])
    pods = store.current().pods
    assert sorted(pods) == [1, 3]
    assert all("managedFields" not in state.metadata for state in pods.values())
    assert all("env" not in state.pod["spec"]["containers"][0] for state in pods.values())


def test_a_resync_compacts_only_the_pods_that_changed(mocker: MockerFixture) -> None:
    """A full list of N pods the store already holds at their versions costs look-ups, no new states."""
    scheduler = DeterministicScheduler(ManualClock(0.0))
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)
    listed = [executor_pod(i, "Running", rv=i) for i in range(1, 1001)]
    compactions = mocker.spy(store_pods.PodCompactor, "compact")
    store.replace_snapshot(listed, resource_version="1000")
    assert compactions.call_count == 1000
    held = dict(store.current().pods)

    store.replace_snapshot(json.loads(json.dumps(listed)), resource_version="1001")  # nothing changed
    assert compactions.call_count == 1000
    assert all(store.current().pods[i] is held[i] for i in held)

    listed[0] = executor_pod(1, "Failed", rv=1002, containers=[terminated_container()])
    store.replace_snapshot(listed, resource_version="1002")  # one pod changed
    assert compactions.call_count == 1001
    assert store.current().pods[1].phase.value == "failed"
