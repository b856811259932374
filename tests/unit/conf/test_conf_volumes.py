"""spark.kubernetes.executor.volumes.* parsing (Spark's KubernetesVolumeUtils rules)."""

from __future__ import annotations

import logging

import pytest

from k8s_backend.conf.model import KubernetesConf, VolumeSpec
from k8s_backend.conf.parse_volumes import parse_volumes
from k8s_backend.errors import ConfigError

V = "spark.kubernetes.executor.volumes."


def volumes(props: dict[str, str]) -> tuple[VolumeSpec, ...]:
    return KubernetesConf.from_spark_conf(props).executor.volumes


def test_host_path() -> None:
    (spec,) = volumes(
        {
            V + "hostPath.data.mount.path": "/data",
            V + "hostPath.data.mount.readOnly": "TRUE",
            V + "hostPath.data.mount.subPath": "sub",
            V + "hostPath.data.options.path": "/mnt/data",
            V + "hostPath.data.options.type": "Directory",
        }
    )
    assert spec == VolumeSpec(
        name="data",
        type="hostPath",
        mount_path="/data",
        mount_sub_path="sub",
        mount_read_only=True,
        path="/mnt/data",
        host_path_type="Directory",
    )


def test_empty_dir() -> None:
    (spec,) = volumes(
        {
            V + "emptyDir.scratch.mount.path": "/scratch",
            V + "emptyDir.scratch.options.medium": "Memory",
            V + "emptyDir.scratch.options.sizeLimit": "4g",
        }
    )
    assert spec == VolumeSpec(
        name="scratch", type="emptyDir", mount_path="/scratch", medium="Memory", size_limit="4Gi"
    )


def test_empty_dir_needs_no_option() -> None:
    (spec,) = volumes({V + "emptyDir.tmp.mount.path": "/tmp/x"})
    assert (spec.medium, spec.size_limit) == ("", "")


def test_nfs() -> None:
    (spec,) = volumes(
        {
            V + "nfs.share.mount.path": "/share",
            V + "nfs.share.options.path": "/exports/share",
            V + "nfs.share.options.server": "nfs.example.com",
        }
    )
    assert spec == VolumeSpec(
        name="share", type="nfs", mount_path="/share", path="/exports/share", server="nfs.example.com"
    )


def test_persistent_volume_claim_on_demand_with_metadata() -> None:
    pvc = V + "persistentVolumeClaim.spill."
    (spec,) = volumes(
        {
            pvc + "mount.path": "/spill",
            pvc + "mount.subPathExpr": "$(POD_NAME)",
            pvc + "options.claimName": "OnDemand",
            pvc + "options.storageClass": "fast",
            pvc + "options.sizeLimit": "100Gi",
            pvc + "label.team": "data",
            pvc + "annotation.example.com/note": "kept",
        }
    )
    assert spec == VolumeSpec(
        name="spill",
        type="persistentVolumeClaim",
        mount_path="/spill",
        mount_sub_path_expr="$(POD_NAME)",
        claim_name="OnDemand",
        storage_class="fast",
        size_limit="100Gi",
        labels={"team": "data"},
        annotations={"example.com/note": "kept"},
    )


def test_claim_name_with_executor_id_placeholder_is_kept_for_the_pod_builder() -> None:
    (spec,) = volumes(
        {
            V + "persistentVolumeClaim.d.mount.path": "/d",
            V + "persistentVolumeClaim.d.options.claimName": "data-SPARK_EXECUTOR_ID",
        }
    )
    assert spec.claim_name == "data-SPARK_EXECUTOR_ID"


def test_volumes_are_sorted_by_type_then_name() -> None:
    specs = volumes(
        {
            V + "persistentVolumeClaim.b.mount.path": "/b",
            V + "persistentVolumeClaim.b.options.claimName": "OnDemand",
            V + "emptyDir.z.mount.path": "/z",
            V + "emptyDir.a.mount.path": "/a",
        }
    )
    assert [(s.type, s.name) for s in specs] == [
        ("emptyDir", "a"),
        ("emptyDir", "z"),
        ("persistentVolumeClaim", "b"),
    ]


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {V + "gcePersistentDisk.d.mount.path": "/d"},
            V + "gcePersistentDisk.d.*: Kubernetes Volume type `gcePersistentDisk` is "
            "not supported; use one of hostPath, emptyDir, nfs, persistentVolumeClaim",
        ),
        (
            {V + "hostPath.d.options.path": "/x"},
            "spark.kubernetes.executor.volumes.hostPath.d.mount.path is required for volume hostPath.d",
        ),
        (
            {V + "hostPath.d": "x"},
            "spark.kubernetes.executor.volumes.hostPath.d.mount.path is required for volume hostPath.d",
        ),
        (
            {V + "hostPath.d.mount.path": "/d"},
            "spark.kubernetes.executor.volumes.hostPath.d.options.path is required for hostPath",
        ),
        (
            {V + "nfs.d.mount.path": "/d", V + "nfs.d.options.path": "/e"},
            "spark.kubernetes.executor.volumes.nfs.d.options.server is required for nfs",
        ),
        (
            {V + "nfs.d.mount.path": "/d", V + "nfs.d.options.server": "s"},
            "spark.kubernetes.executor.volumes.nfs.d.options.path is required for nfs",
        ),
        (
            {V + "persistentVolumeClaim.d.mount.path": "/d"},
            "spark.kubernetes.executor.volumes.persistentVolumeClaim.d.options.claimName is required for "
            "persistentVolumeClaim",
        ),
        (
            {
                V + "emptyDir.d.mount.path": "/d",
                V + "emptyDir.d.mount.subPath": "a",
                V + "emptyDir.d.mount.subPathExpr": "b",
            },
            f"These config options are mutually exclusive: {V}emptyDir.d.mount.subPath, "
            "spark.kubernetes.executor.volumes.emptyDir.d.mount.subPathExpr",
        ),
        (
            {V + "emptyDir.a.mount.path": "/x", V + "emptyDir.b.mount.path": "/x"},
            "Found duplicated mountPath: '/x'",
        ),
        (
            {V + "emptyDir.d.mount.path": "/d", V + "emptyDir.d.options.sizeLimit": "500"},
            V + "emptyDir.d.options.sizeLimit=500 is invalid: Volume size `500` is "
            "smaller than 1KiB. Missing units?",
        ),
        (
            {
                V + "persistentVolumeClaim.d.mount.path": "/d",
                V + "persistentVolumeClaim.d.options.claimName": "c",
                V + "persistentVolumeClaim.d.options.sizeLimit": "10",
            },
            "Missing units?",
        ),
        (
            {V + "emptyDir.d.mount.path": "/d", V + "emptyDir.d.options.sizeLimit": "big"},
            "spark.kubernetes.executor.volumes.emptyDir.d.options.sizeLimit=big is not a size",
        ),
        (
            {V + "emptyDir.d.mount.path": "/d", V + "emptyDir.d.mount.readOnly": "yes"},
            "spark.kubernetes.executor.volumes.emptyDir.d.mount.readOnly=yes is not a boolean",
        ),
        ({V + "emptyDir.Data.mount.path": "/d"}, "the volume name 'Data' must be a DNS-1123 label"),
        (
            {
                V + "hostPath.d.mount.path": "/d",
                V + "hostPath.d.options.path": "/e",
                V + "hostPath.d.options.type": "Dir",
            },
            "spark.kubernetes.executor.volumes.hostPath.d.options.type=Dir is invalid: use one of "
            "DirectoryOrCreate",
        ),
        (
            {V + "emptyDir.d.mount.path": "/d", V + "emptyDir.d.options.medium": "memory"},
            "options.medium=memory is invalid: use Memory, HugePages or HugePages-<size>",
        ),
        (
            {
                V + "persistentVolumeClaim.d.mount.path": "/d",
                V + "persistentVolumeClaim.d.options.claimName": "My_Claim",
            },
            "options.claimName=My_Claim is invalid: the claim name must be a DNS-1123 subdomain",
        ),
        (
            {
                V + "persistentVolumeClaim.d.mount.path": "/d",
                V + "persistentVolumeClaim.d.options.claimName": "c",
                V + "persistentVolumeClaim.d.label.team": "a b",
            },
            "label.team=a b is invalid: the claim label",
        ),
        (
            {
                V + "persistentVolumeClaim.d.mount.path": "/d",
                V + "persistentVolumeClaim.d.options.claimName": "c",
                V + "persistentVolumeClaim.d.annotation.bad key": "v",
            },
            "annotation.bad key=v is invalid",
        ),
    ],
)
def test_volume_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        volumes(props)
    assert message in str(caught.value)


def test_huge_pages_media_are_accepted() -> None:
    for medium in ("HugePages", "HugePages-2Mi"):
        (spec,) = parse_volumes({V + "emptyDir.h.mount.path": "/h", V + "emptyDir.h.options.medium": medium})
        assert spec.medium == medium


def test_unknown_options_warn_with_a_suggestion(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        volumes(
            {
                V + "emptyDir.d.mount.path": "/d",
                V + "emptyDir.d.options.sizelimit": "1Gi",
                V + "hostPath": "x",
            }
        )
    assert (
        f"Spark property {V}emptyDir.d.options.sizelimit is not used by k8s_backend; "
        "did you mean spark.kubernetes.executor.volumes.emptyDir.d.options.sizeLimit?"
    ) in caplog.messages
    assert any("spark.kubernetes.executor.volumes.hostPath is ignored" in m for m in caplog.messages)


def test_labels_on_non_claim_volumes_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        (spec,) = volumes({V + "emptyDir.d.mount.path": "/d", V + "emptyDir.d.label.team": "a"})
    assert dict(spec.labels) == {}
    assert any("emptyDir.d.label.team is not used" in m for m in caplog.messages)


@pytest.mark.parametrize(
    ("extra", "key", "fragment"),
    [
        ({"hostPath.d.mount.subPath": "../etc"}, "hostPath.d.mount.subPath", "must not contain '..'"),
        ({"hostPath.d.mount.subPath": "a/../../b"}, "hostPath.d.mount.subPath", "must not contain '..'"),
        ({"hostPath.d.mount.subPath": "/etc"}, "hostPath.d.mount.subPath", "must be a relative path"),
        ({"hostPath.d.mount.subPathExpr": "$(POD)/.."}, "hostPath.d.mount.subPathExpr", "'..'"),
        ({"hostPath.d.options.path": "/mnt/../etc"}, "hostPath.d.options.path", "must not contain '..'"),
    ],
)
def test_paths_a_real_api_server_refuses_are_config_errors(
    extra: dict[str, str], key: str, fragment: str
) -> None:
    props = {V + "hostPath.d.mount.path": "/data", V + "hostPath.d.options.path": "/mnt/data"}
    props.update({V + k: v for k, v in extra.items()})
    with pytest.raises(ConfigError, match=fragment) as caught:
        volumes(props)
    assert caught.value.key == V + key


def test_an_nfs_path_must_be_absolute() -> None:
    props = {
        V + "nfs.share.mount.path": "/share",
        V + "nfs.share.options.server": "nfs.example.com",
        V + "nfs.share.options.path": "exports/data",
    }
    with pytest.raises(ConfigError, match="must be an absolute path") as caught:
        volumes(props)
    assert caught.value.key == V + "nfs.share.options.path"
    props[V + "nfs.share.options.path"] = "/exports/data"
    (spec,) = volumes(props)
    assert spec.path == "/exports/data"


def test_a_descending_sub_path_is_accepted() -> None:
    props = {V + "hostPath.d.mount.path": "/data", V + "hostPath.d.options.path": "/mnt/data"}
    (spec,) = volumes({**props, V + "hostPath.d.mount.subPath": "a/b..c/./d"})
    assert spec.mount_sub_path == "a/b..c/./d"
