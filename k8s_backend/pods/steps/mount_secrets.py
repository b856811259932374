"""Secrets mounted as files (``spark.kubernetes.executor.secrets.<secret>=<path>``)."""

from __future__ import annotations

from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, volume_mount
from k8s_backend.pods.step import SparkPod, StepContext


class MountSecretsStep:
    """Spark's MountSecretsFeatureStep: each secret is a volume ``<secret>-volume`` mounted at its path."""

    def __init__(self, conf: KubernetesConf) -> None:
        self._mounts = {str(name): str(path) for name, path in conf.executor.secret_mounts.items()}

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        if not self._mounts:
            return pod
        pod = pod.copy()
        add_volumes(
            pod.pod,
            [{"name": f"{name}-volume", "secret": {"secretName": name}} for name in self._mounts],
        )
        add_volume_mounts(
            pod.container, [volume_mount(f"{name}-volume", path) for name, path in self._mounts.items()]
        )
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
