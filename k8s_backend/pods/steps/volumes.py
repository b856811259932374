"""User volumes (``spark.kubernetes.executor.volumes.<type>.<name>.*``), incl. on-demand claims.

Spark's MountVolumesFeatureStep. A claimName of ``OnDemand`` becomes ``<pod name>-pvc-<i>`` (``i`` the
volume's position), and the literal ``SPARK_EXECUTOR_ID`` in a claimName becomes the executor id. A
claim with both a storage class and a size is also returned as a PersistentVolumeClaim to create, with
the volume's ``label.*`` and ``annotation.*`` options on it. hostPath ``options.type`` and
``mount.subPathExpr`` are passed through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf, VolumeSpec
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    CLAIM_EXECUTOR_ID_PLACEHOLDER,
    LEGACY_PVC_ACCESS_MODE,
    PVC_ACCESS_MODE,
    PVC_ON_DEMAND,
    PVC_POSTFIX,
    SPARK_APP_ID_LABEL,
)
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, volume_mount
from k8s_backend.pods.step import SparkPod, StepContext

VOLUMES_PREFIX = "spark.kubernetes.executor.volumes"
_REQUIRED_OPTIONS = {
    "hostPath": ("path",),
    "nfs": ("path", "server"),
    "persistentVolumeClaim": ("claim_name",),
    "emptyDir": (),
}
_OPTION_KEYS = {"path": "options.path", "server": "options.server", "claim_name": "options.claimName"}


def _check(volumes: Sequence[VolumeSpec]) -> None:
    for spec in volumes:
        prefix = f"{VOLUMES_PREFIX}.{spec.type}.{spec.name}"
        if spec.type not in _REQUIRED_OPTIONS:
            raise ConfigError(
                f"{prefix}: unsupported volume type {spec.type!r}; use one of {', '.join(_REQUIRED_OPTIONS)}",
                key=prefix,
                value=spec.type,
            )
        if not spec.mount_path:
            raise ConfigError(f"{prefix}.mount.path must be set", key=f"{prefix}.mount.path", value=None)
        for option in _REQUIRED_OPTIONS[spec.type]:
            if not getattr(spec, option):
                key = f"{prefix}.{_OPTION_KEYS[option]}"
                raise ConfigError(f"{key} must be set for a {spec.type} volume", key=key, value=None)
    duplicates = [path for path, count in Counter(v.mount_path for v in volumes).items() if count > 1]
    if duplicates:
        paths = ", ".join(f"'{p}'" for p in duplicates)
        raise ConfigError(
            f"Found duplicated mountPath: {paths} in {VOLUMES_PREFIX}.*: give each volume its own mount.path",
            key=f"{VOLUMES_PREFIX}.*.mount.path",
            value=duplicates,
        )


def claim_name(spec: VolumeSpec, index: int, ctx: StepContext) -> str:
    """The claim an executor's PVC volume refers to."""
    name = spec.claim_name.replace(PVC_ON_DEMAND, f"{ctx.pod_name}{PVC_POSTFIX}-{index}")
    return name.replace(CLAIM_EXECUTOR_ID_PLACEHOLDER, str(ctx.executor_id))


def _volume_source(spec: VolumeSpec, index: int, ctx: StepContext) -> Obj:
    if spec.type == "hostPath":
        host_path: Obj = {"path": spec.path}
        # Spark always sends the type, "" (no check) by default; leaving it out means the same.
        if spec.host_path_type:
            host_path["type"] = spec.host_path_type
        return {"hostPath": host_path}
    if spec.type == "nfs":
        return {"nfs": {"path": spec.path, "server": spec.server}}
    if spec.type == "emptyDir":
        empty_dir: Obj = {}
        if spec.medium:
            empty_dir["medium"] = spec.medium
        if spec.size_limit:
            empty_dir["sizeLimit"] = spec.size_limit
        return {"emptyDir": empty_dir}
    return {
        "persistentVolumeClaim": {"claimName": claim_name(spec, index, ctx), "readOnly": spec.mount_read_only}
    }


def _mount(spec: VolumeSpec) -> Obj:
    mount = volume_mount(
        spec.name, spec.mount_path, sub_path=spec.mount_sub_path, read_only=spec.mount_read_only
    )
    if spec.mount_sub_path_expr:  # parsing made it exclusive with subPath
        mount["subPathExpr"] = spec.mount_sub_path_expr
    return mount


def _claim_metadata(spec: VolumeSpec, index: int, ctx: StepContext) -> Obj:
    # As Spark: the volume's own labels, then the app label (which wins), and its annotations as given.
    metadata: Obj = {
        "name": claim_name(spec, index, ctx),
        "labels": {**{k: str(v) for k, v in spec.labels.items()}, SPARK_APP_ID_LABEL: ctx.app_id},
    }
    if spec.annotations:
        metadata["annotations"] = {k: str(v) for k, v in spec.annotations.items()}
    return metadata


class MountVolumesStep:
    """Mount every configured volume; emit claims for on-demand PVCs with a storage class and size."""

    def __init__(self, conf: KubernetesConf) -> None:
        _check(conf.executor.volumes)
        self._volumes = conf.executor.volumes
        self._access_mode = (
            LEGACY_PVC_ACCESS_MODE if conf.executor.legacy_read_write_once else PVC_ACCESS_MODE
        )

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        if not self._volumes:
            return pod
        pod = pod.copy()
        add_volumes(
            pod.pod,
            [{"name": spec.name, **_volume_source(spec, i, ctx)} for i, spec in enumerate(self._volumes)],
        )
        add_volume_mounts(pod.container, [_mount(spec) for spec in self._volumes])
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _claim_metadata(spec, i, ctx),
                "spec": {
                    "storageClassName": spec.storage_class,
                    "accessModes": [self._access_mode],
                    "resources": {"requests": {"storage": spec.size_limit}},
                },
            }
            for i, spec in enumerate(self._volumes)
            if spec.type == "persistentVolumeClaim" and spec.storage_class and spec.size_limit
        ]
