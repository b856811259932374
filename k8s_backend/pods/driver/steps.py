"""The driver's built-in steps: Spark's MountSecretsFeatureStep, EnvSecretsFeatureStep and
MountVolumesFeatureStep, reading the ``spark.kubernetes.driver.*`` families."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from k8s_backend.conf.model import VolumeSpec
from k8s_backend.conf.parse_pod import secret_env, secret_mounts
from k8s_backend.conf.parse_volumes import parse_volumes
from k8s_backend.conf.units import parse_bool
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    LEGACY_PVC_ACCESS_MODE,
    PVC_ACCESS_MODE,
    PVC_ON_DEMAND,
    PVC_POSTFIX,
    SPARK_APP_ID_LABEL,
)
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, upsert_env, volume_mount
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.steps.local_dirs import generated_local_dir, with_local_dirs

SECRETS_PREFIX = "spark.kubernetes.driver.secrets."
SECRET_KEY_REF_PREFIX = "spark.kubernetes.driver.secretKeyRef."
VOLUMES_PREFIX = "spark.kubernetes.driver.volumes."
LEGACY_ACCESS_MODE_KEY = "spark.kubernetes.legacy.useReadWriteOnceAccessMode"
LOCAL_DIRS_KEY = "spark.local.dir"
TMPFS_KEY = "spark.kubernetes.local.dirs.tmpfs"


class DriverMountSecretsStep:
    """``spark.kubernetes.driver.secrets.<secret>=<path>``: each Secret a volume ``<secret>-volume``."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self._mounts = secret_mounts(properties, SECRETS_PREFIX)

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        if not self._mounts:
            return pod
        pod = pod.copy()
        add_volumes(
            pod.pod, [{"name": f"{name}-volume", "secret": {"secretName": name}} for name in self._mounts]
        )
        add_volume_mounts(
            pod.container, [volume_mount(f"{name}-volume", path) for name, path in self._mounts.items()]
        )
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()


class DriverEnvSecretsStep:
    """``spark.kubernetes.driver.secretKeyRef.<ENV>=<secret>:<key>``: env vars read from Secrets."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self._refs = {
            env: ref.split(":", 1) for env, ref in secret_env(properties, SECRET_KEY_REF_PREFIX).items()
        }

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        if not self._refs:
            return pod
        pod = pod.copy()
        upsert_env(
            pod.container,
            [
                {"name": env, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
                for env, (secret, key) in self._refs.items()
            ],
        )
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()


def driver_claim_name(spec: VolumeSpec, index: int, ctx: DriverContext) -> str:
    """As Spark: ``OnDemand`` becomes ``<driver pod>-pvc-<i>`` (its ``<prefix>-driver-pvc-<i>``)."""
    return spec.claim_name.replace(PVC_ON_DEMAND, f"{ctx.pod_name}{PVC_POSTFIX}-{index}")


class DriverVolumesStep:
    """``spark.kubernetes.driver.volumes.<type>.<name>.*``: hostPath, emptyDir, nfs and PVC volumes; an
    ``OnDemand`` claim with a storage class and a size is created with the driver, owned by it."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self._volumes = parse_volumes(properties, VOLUMES_PREFIX)
        legacy = parse_bool(properties.get(LEGACY_ACCESS_MODE_KEY, "false"), key=LEGACY_ACCESS_MODE_KEY)
        self._access_mode = LEGACY_PVC_ACCESS_MODE if legacy else PVC_ACCESS_MODE

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        if not self._volumes:
            return pod
        pod = pod.copy()
        add_volumes(
            pod.pod,
            [{"name": spec.name, **self._source(spec, i, ctx)} for i, spec in enumerate(self._volumes)],
        )
        add_volume_mounts(pod.container, [_mount(spec) for spec in self._volumes])
        return pod

    @staticmethod
    def _source(spec: VolumeSpec, index: int, ctx: DriverContext) -> Obj:
        if spec.type == "hostPath":
            return {
                "hostPath": {
                    "path": spec.path,
                    **({"type": spec.host_path_type} if spec.host_path_type else {}),
                }
            }
        if spec.type == "nfs":
            return {"nfs": {"path": spec.path, "server": spec.server}}
        if spec.type == "emptyDir":
            empty: Obj = {}
            if spec.medium:
                empty["medium"] = spec.medium
            if spec.size_limit:
                empty["sizeLimit"] = spec.size_limit
            return {"emptyDir": empty}
        claim = driver_claim_name(spec, index, ctx)
        return {"persistentVolumeClaim": {"claimName": claim, "readOnly": spec.mount_read_only}}

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        claims: list[Obj] = []
        for i, spec in enumerate(self._volumes):
            if spec.type != "persistentVolumeClaim" or not (spec.storage_class and spec.size_limit):
                continue
            metadata: Obj = {
                "name": driver_claim_name(spec, i, ctx),
                "labels": {**{k: str(v) for k, v in spec.labels.items()}, SPARK_APP_ID_LABEL: ctx.app_id},
            }
            if spec.annotations:
                metadata["annotations"] = {k: str(v) for k, v in spec.annotations.items()}
            claims.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": metadata,
                    "spec": {
                        "storageClassName": spec.storage_class,
                        "accessModes": [self._access_mode],
                        "resources": {"requests": {"storage": spec.size_limit}},
                    },
                }
            )
        return claims


def _mount(spec: VolumeSpec) -> Obj:
    mount = volume_mount(
        spec.name, spec.mount_path, sub_path=spec.mount_sub_path, read_only=spec.mount_read_only
    )
    if spec.mount_sub_path_expr:
        mount["subPathExpr"] = spec.mount_sub_path_expr
    return mount


class DriverLocalDirsStep:
    """Spark's LocalDirsFeatureStep on the driver: ``spark.local.dir`` (else a generated
    ``/var/data/spark-<uuid>``) backed by emptyDir volumes (in memory with
    ``spark.kubernetes.local.dirs.tmpfs``) unless a volume named ``spark-local-dir-*`` is mounted
    already; ``SPARK_LOCAL_DIRS`` lists them."""

    def __init__(
        self, properties: Mapping[str, str], default_local_dir: Callable[[], str] = generated_local_dir
    ) -> None:
        self._configured = [d.strip() for d in properties.get(LOCAL_DIRS_KEY, "").split(",") if d.strip()]
        self._tmpfs = parse_bool(properties.get(TMPFS_KEY, "false"), key=TMPFS_KEY)
        self._default_local_dir = default_local_dir

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        return with_local_dirs(
            pod, self._configured, tmpfs=self._tmpfs, default_local_dir=self._default_local_dir
        )

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()
