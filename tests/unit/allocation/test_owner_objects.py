"""The StatefulSet/Deployment owner objects and their scaling decisions (pure parts of Spark's
StatefulSetPodsAllocator and DeploymentPodsAllocator)."""

from __future__ import annotations

import attrs
import pytest

from k8s_backend.allocation.owner_objects import (
    DELETION_COST_ANNOTATION,
    OwnerKind,
    deletion_cost_patch,
    executor_id_patch,
    owner_object,
    scale_patch,
)
from k8s_backend.allocation.owner_scaling import (
    CreateOwner,
    ScaleOwner,
    assign_ids,
    highest_id,
    plan_owners,
    pods_to_mark,
    unresolved_pods,
)
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.snapshots.states import UNRESOLVED_EXECUTOR_ID

APP = "spark-app"
DRIVER_OWNER: Obj = {"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": "u-1", "controller": True}


def built(allocator: str, **props: str) -> ExecutorPodSpec:
    conf = KubernetesConf.from_spark_conf({"spark.kubernetes.container.image": "spark:4.3.0", **props})
    conf = attrs.evolve(conf, allocation=attrs.evolve(conf.allocation, allocator=allocator))
    builder = ExecutorPodBuilder(conf, None, facts=DriverFacts(spark_user="u", spark_version="4.3.0"))
    profile = conf.executor.default_profile
    return builder.build(
        ExecutorPodRequest(
            executor_id=UNRESOLVED_EXECUTOR_ID,
            app_id=APP,
            driver_url="spark://CoarseGrainedScheduler@driver:7078",
            pod_name_prefix="app",
            resource_profile=profile,
        )
    )


def spec_of(kind: OwnerKind, pod: ExecutorPodSpec, replicas: int = 3) -> Obj:
    return owner_object(kind, pod, app_id=APP, rp_id=0, replicas=replicas, driver_owner=DRIVER_OWNER)


def test_the_statefulset_is_sparks_parallel_set_with_an_execid_template() -> None:
    obj = spec_of(OwnerKind.STATEFUL_SET, built("statefulset"))
    assert obj["kind"] == "StatefulSet" and obj["apiVersion"] == "apps/v1"
    assert obj["metadata"]["name"] == "spark-s-spark-app-0"
    assert obj["metadata"]["ownerReferences"] == [DRIVER_OWNER]
    spec = obj["spec"]
    assert spec["podManagementPolicy"] == "Parallel" and spec["replicas"] == 3
    selector = {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-resourceprofile-id": "0"}
    assert spec["selector"] == {"matchLabels": selector}
    template = spec["template"]
    assert template["metadata"]["labels"]["spark-exec-id"] == "EXECID"
    assert selector.items() <= template["metadata"]["labels"].items()
    assert "name" not in template["metadata"] and "ownerReferences" not in template["metadata"]
    assert template["spec"]["restartPolicy"] == "Always" and "hostname" not in template["spec"]
    env = {e["name"]: e.get("value") for e in template["spec"]["containers"][0]["env"]}
    assert env["SPARK_EXECUTOR_ID"] == "EXECID"
    assert DELETION_COST_ANNOTATION not in template["metadata"].get("annotations", {})


def test_the_deployment_has_no_pod_management_policy_and_a_zero_deletion_cost() -> None:
    obj = spec_of(OwnerKind.DEPLOYMENT, built("deployment"), replicas=2)
    assert obj["kind"] == "Deployment" and obj["metadata"]["name"] == "spark-d-spark-app-0"
    assert "podManagementPolicy" not in obj["spec"] and obj["spec"]["replicas"] == 2
    assert obj["spec"]["template"]["metadata"]["annotations"][DELETION_COST_ANNOTATION] == "0"
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_a_template_deletion_cost_is_kept() -> None:
    pod = built("deployment", **{f"spark.kubernetes.executor.annotation.{DELETION_COST_ANNOTATION}": "7"})
    obj = spec_of(OwnerKind.DEPLOYMENT, pod)
    assert obj["spec"]["template"]["metadata"]["annotations"][DELETION_COST_ANNOTATION] == "7"


ON_DEMAND = {
    "spark.kubernetes.executor.volumes.persistentVolumeClaim.data.mount.path": "/data",
    "spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName": "OnDemand",
    "spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.sizeLimit": "1Gi",
    "spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.storageClass": "standard",
}


def test_statefulset_on_demand_claims_become_claim_templates_named_after_the_volume() -> None:
    pod = built("statefulset", **ON_DEMAND)
    assert pod.pvcs
    spec = spec_of(OwnerKind.STATEFUL_SET, pod)["spec"]
    assert [t["metadata"]["name"] for t in spec["volumeClaimTemplates"]] == ["data"]
    assert spec["volumeClaimTemplates"][0]["spec"] == pod.pvcs[0]["spec"]
    assert "data" not in [v["name"] for v in spec["template"]["spec"].get("volumes", [])]
    mounts = spec["template"]["spec"]["containers"][0]["volumeMounts"]
    data_mount = next(m for m in mounts if m["name"] == "data")
    assert data_mount["mountPath"] == "/data"


def test_the_deployment_refuses_claims_naming_the_fix() -> None:
    with pytest.raises(ConfigError, match="not supported with the deployment allocator.*=statefulset"):
        spec_of(OwnerKind.DEPLOYMENT, built("deployment", **ON_DEMAND))


def test_only_an_execid_pod_makes_a_template() -> None:
    pod = built("direct")
    pod.pod["metadata"]["labels"]["spark-exec-id"] = "1"
    with pytest.raises(ValueError, match="EXECID"):
        spec_of(OwnerKind.STATEFUL_SET, pod)


def test_targets_create_missing_owners_and_scale_changed_ones_only() -> None:
    assert plan_owners({0: 3, 1: 0}, {}) == (CreateOwner(0, 3), CreateOwner(1, 0))
    assert plan_owners({0: 5, 1: 0}, {0: 3, 1: 0}) == (ScaleOwner(0, 5),)
    assert plan_owners({0: 1}, {0: 3, 1: 2}) == (ScaleOwner(0, 1),)
    assert plan_owners({0: 3}, {0: 3}) == ()
    with pytest.raises(ValueError, match="negative"):
        plan_owners({0: -1}, {})


def pod(name: str, exec_id: str, created: str = "2026-01-01T00:00:00Z", deleting: bool = False) -> Obj:
    metadata: Obj = {"name": name, "labels": {"spark-exec-id": exec_id}, "creationTimestamp": created}
    if deleting:
        metadata["deletionTimestamp"] = created
    return {"metadata": metadata}


def test_pods_waiting_for_an_id_get_the_next_ids_oldest_first() -> None:
    pods = [
        pod("b", "EXECID", "2026-01-01T00:00:02Z"),
        pod("a", "EXECID", "2026-01-01T00:00:02Z"),
        pod("c", "EXECID", "2026-01-01T00:00:01Z"),
        pod("d", "EXECID", deleting=True),
        pod("e", "4"),
    ]
    names = unresolved_pods(pods)
    assert names == ("c", "a", "b")
    assert highest_id(pods) == 4 and highest_id([]) == 0
    assert assign_ids(names, 4) == (("c", 5), ("a", 6), ("b", 7))


def test_the_pods_to_remove_are_the_live_pods_of_the_killed_executors() -> None:
    pods = [pod("x-1", "1"), pod("x-2", "2"), pod("x-3", "3", deleting=True), pod("x-4", "EXECID")]
    assert pods_to_mark(pods, [2, 3, 9]) == ("x-2",)


def test_the_patches() -> None:
    assert scale_patch(4) == {"spec": {"replicas": 4}}
    assert deletion_cost_patch(-100) == {"metadata": {"annotations": {DELETION_COST_ANNOTATION: "-100"}}}
    assert executor_id_patch(3) == [
        {"op": "test", "path": "/metadata/labels/spark-exec-id", "value": "EXECID"},
        {"op": "replace", "path": "/metadata/labels/spark-exec-id", "value": "3"},
    ]
