"""MountVolumesStep: a port of Spark's MountVolumesFeatureStepSuite (executor side)."""

from __future__ import annotations

import pytest
from pod_builder_fixtures import APP_ID, make_conf, make_ctx, run_step

from k8s_backend.conf.model import VolumeSpec
from k8s_backend.errors import ConfigError
from k8s_backend.pods.steps.volumes import MountVolumesStep


def configure(*volumes: VolumeSpec, **executor):
    conf = make_conf(volumes=volumes, **executor)
    step = MountVolumesStep(conf)
    return run_step(step, conf), step.additional_resources(make_ctx(conf)), conf


def test_mounts_host_path_volumes() -> None:
    pod, claims, _ = configure(VolumeSpec("testVolume", "hostPath", "/tmp", path="/hostPath/tmp"))
    assert pod.pod["spec"]["volumes"] == [{"name": "testVolume", "hostPath": {"path": "/hostPath/tmp"}}]
    assert pod.container["volumeMounts"] == [{"name": "testVolume", "mountPath": "/tmp", "readOnly": False}]
    assert claims == []


def test_mounts_persistent_volume_claims() -> None:
    pod, claims, _ = configure(
        VolumeSpec("testVolume", "persistentVolumeClaim", "/tmp", mount_read_only=True, claim_name="pvcClaim")
    )
    assert pod.pod["spec"]["volumes"] == [
        {"name": "testVolume", "persistentVolumeClaim": {"claimName": "pvcClaim", "readOnly": True}}
    ]
    assert pod.container["volumeMounts"] == [{"name": "testVolume", "mountPath": "/tmp", "readOnly": True}]
    assert claims == []  # an existing claim: nothing to create


def test_parameterized_claim_names_get_the_executor_id() -> None:  # SPARK-32713
    pod, claims, _ = configure(
        VolumeSpec("testVolume", "persistentVolumeClaim", "/tmp", claim_name="pvc-spark-SPARK_EXECUTOR_ID")
    )
    assert pod.pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "pvc-spark-1"
    assert claims == []


def test_parameterized_claim_with_storage_class_is_created() -> None:  # SPARK-32713
    _, claims, _ = configure(
        VolumeSpec(
            "testVolume",
            "persistentVolumeClaim",
            "/tmp",
            claim_name="pvc-spark-SPARK_EXECUTOR_ID",
            storage_class="fast",
            size_limit="512M",
        )
    )
    assert [c["metadata"]["name"] for c in claims] == ["pvc-spark-1"]


def test_on_demand_claims_in_executors() -> None:
    pod, claims, _ = configure(
        VolumeSpec(
            "data",
            "persistentVolumeClaim",
            "/data",
            claim_name="OnDemand",
            storage_class="gp",
            size_limit="1Gi",
        )
    )
    assert pod.pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "base-exec-1-pvc-0", "readOnly": False}}
    ]
    assert claims == [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "base-exec-1-pvc-0", "labels": {"spark-app-selector": APP_ID}},
            "spec": {
                "storageClassName": "gp",
                "accessModes": ["ReadWriteOncePod"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]


def test_on_demand_claim_without_size_is_mounted_but_not_created() -> None:
    pod, claims, _ = configure(VolumeSpec("data", "persistentVolumeClaim", "/data", claim_name="OnDemand"))
    assert pod.pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "base-exec-1-pvc-0"
    assert claims == []


def test_legacy_access_mode() -> None:
    _, claims, _ = configure(
        VolumeSpec(
            "d", "persistentVolumeClaim", "/d", claim_name="OnDemand", storage_class="gp", size_limit="1Gi"
        ),
        legacy_read_write_once=True,
    )
    assert claims[0]["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_on_demand_index_is_the_volume_position() -> None:
    pod, claims, _ = configure(
        VolumeSpec("scratch", "emptyDir", "/scratch"),
        VolumeSpec(
            "d", "persistentVolumeClaim", "/d", claim_name="OnDemand", storage_class="gp", size_limit="1Gi"
        ),
    )
    assert [c["metadata"]["name"] for c in claims] == ["base-exec-1-pvc-1"]
    assert pod.pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"] == "base-exec-1-pvc-1"


def test_mounts_multiple_volumes() -> None:
    pod, _, _ = configure(
        VolumeSpec("hpVolume", "hostPath", "/tmp", path="/hostPath/tmp"),
        VolumeSpec("checkpointVolume", "persistentVolumeClaim", "/checkpoints", claim_name="pvcClaim"),
    )
    assert [v["name"] for v in pod.pod["spec"]["volumes"]] == ["hpVolume", "checkpointVolume"]
    assert len(pod.container["volumeMounts"]) == 2


def test_mounts_empty_dir() -> None:
    pod, _, _ = configure(VolumeSpec("testVolume", "emptyDir", "/tmp", medium="Memory", size_limit="6G"))
    assert pod.pod["spec"]["volumes"] == [
        {"name": "testVolume", "emptyDir": {"medium": "Memory", "sizeLimit": "6G"}}
    ]


def test_mounts_empty_dir_with_no_options() -> None:
    pod, _, _ = configure(VolumeSpec("testVolume", "emptyDir", "/tmp"))
    assert pod.pod["spec"]["volumes"] == [{"name": "testVolume", "emptyDir": {}}]
    assert pod.container["volumeMounts"] == [{"name": "testVolume", "mountPath": "/tmp", "readOnly": False}]


@pytest.mark.parametrize("read_only", [False, True])
def test_mounts_nfs_volumes(read_only: bool) -> None:
    pod, _, _ = configure(
        VolumeSpec(
            "testVolume",
            "nfs",
            "/tmp",
            mount_read_only=read_only,
            path="/share/name",
            server="nfs.example.com",
        )
    )
    # The volume itself is never read-only; the mount says whether the container may write.
    assert pod.pod["spec"]["volumes"] == [
        {"name": "testVolume", "nfs": {"path": "/share/name", "server": "nfs.example.com"}}
    ]
    assert pod.container["volumeMounts"][0]["readOnly"] is read_only


def test_mount_path_should_be_unique() -> None:
    with pytest.raises(ConfigError, match="Found duplicated mountPath: '/data'"):
        configure(
            VolumeSpec("hpVolume", "hostPath", "/data", path="/hostPath/tmp"),
            VolumeSpec("checkpointVolume", "persistentVolumeClaim", "/data", claim_name="pvcClaim"),
        )


def test_mounts_sub_path_on_empty_dir() -> None:
    pod, _, _ = configure(VolumeSpec("testVolume", "emptyDir", "/tmp", mount_sub_path="foo"))
    assert pod.container["volumeMounts"] == [
        {"name": "testVolume", "mountPath": "/tmp", "subPath": "foo", "readOnly": False}
    ]


def test_mounts_sub_path_on_persistent_volume_claims() -> None:
    pod, _, _ = configure(
        VolumeSpec("testVolume", "persistentVolumeClaim", "/tmp", "bar", True, claim_name="pvcClaim")
    )
    assert pod.pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "pvcClaim"
    assert pod.container["volumeMounts"] == [
        {"name": "testVolume", "mountPath": "/tmp", "subPath": "bar", "readOnly": True}
    ]


def test_unknown_volume_type_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unsupported volume type 'configMap'") as err:
        configure(VolumeSpec("v", "configMap", "/x"))
    assert err.value.key == "spark.kubernetes.executor.volumes.configMap.v"


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        (VolumeSpec("v", "hostPath", "/x"), "spark.kubernetes.executor.volumes.hostPath.v.options.path"),
        (VolumeSpec("v", "nfs", "/x", path="/p"), "spark.kubernetes.executor.volumes.nfs.v.options.server"),
        (
            VolumeSpec("v", "persistentVolumeClaim", "/x"),
            "spark.kubernetes.executor.volumes.persistentVolumeClaim.v.options.claimName",
        ),
    ],
)
def test_missing_required_option_is_rejected(spec: VolumeSpec, key: str) -> None:
    with pytest.raises(ConfigError, match="must be set") as err:
        configure(spec)
    assert err.value.key == key
