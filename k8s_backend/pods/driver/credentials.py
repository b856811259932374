"""Spark's DriverKubernetesCredentialsFeatureStep: the driver's API token and credential files, mounted
read-only from its Secret (:mod:`~k8s_backend.pods.driver.credential_files`), and the secret
properties read from it through a ``secretKeyRef`` variable."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from k8s_backend.kube.port import Obj
from k8s_backend.pods.driver.credential_files import mount_credentials, secret_conf_env
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.objects import upsert_env
from k8s_backend.pods.step import SparkPod


@attrs.frozen
class DriverSecret:
    """What the driver's Secret holds for its pod: its name when the pod mounts files from it (their
    Secret ``items``), and its name when the container reads the secret properties from it."""

    mounted_from: str | None = None
    items: tuple[str, ...] = ()
    secret_conf_from: str | None = None


class DriverCredentialsStep:
    """Mount the Secret's token and credential files, and read the secret properties from it."""

    def __init__(self, secret: DriverSecret) -> None:
        self._secret = secret

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        secret = self._secret
        if secret.mounted_from:
            pod = mount_credentials(pod, secret.mounted_from, secret.items)
        if secret.secret_conf_from:
            pod = pod.copy()
            upsert_env(pod.container, [secret_conf_env(secret.secret_conf_from)])
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()
