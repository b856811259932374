"""Reading the driver pod the executor pods are owned by."""

from __future__ import annotations

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import PODS, KubernetesApi, NotFoundError, Obj


def fetch_driver_pod(api: KubernetesApi, namespace: str, name: str | None) -> Obj | None:
    """The driver pod named by ``spark.kubernetes.driver.pod.name``, or None when no name is set.

    Raises :class:`ConfigError` naming the pod and namespace when it does not exist.
    """
    if not name:
        return None
    try:
        return api.get(PODS, namespace, name)
    except NotFoundError:
        raise ConfigError(
            f"No pod was found named {name} in the cluster in the namespace {namespace} (this was "
            "supposed to be the driver pod.). Check spark.kubernetes.driver.pod.name and "
            "spark.kubernetes.namespace.",
            key="spark.kubernetes.driver.pod.name",
            value=name,
        ) from None
