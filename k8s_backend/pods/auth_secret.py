"""The executor auth Secret: the RPC secret of ``spark.authenticate``, kept out of the pod specs.

Spark writes ``spark.authenticate.secret`` into every executor pod's environment
(``_SPARK_AUTH_SECRET``), where anyone allowed to read pods reads it. The backend instead creates
one Secret per application at start, before any executor pod, and the executor containers take the
variable from it through ``secretKeyRef``. The Secret is labelled like the executor ConfigMap (the
application id and the executor role), so ``stop()``, ``k8s-backend kill`` and ``gc`` delete it with
the executors; in cluster mode the driver pod owns it as well.
"""

from __future__ import annotations

import base64

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    DNS_SUBDOMAIN_MAX_LENGTH,
    EXECUTOR_ROLE,
    SPARK_APP_ID_LABEL,
    SPARK_ROLE_LABEL,
)
from k8s_backend.pods.objects import owner_reference

AUTH_SECRET_KEY = "auth-secret"
_SUFFIX = "-auth-secret"


def executors_need_auth_secret(conf: KubernetesConf) -> bool:
    """Whether executors get the secret from the driver: ``spark.authenticate`` is on and they have
    no secret file to read it from."""
    if (conf.get("spark.authenticate") or "").strip().lower() != "true":
        return False
    files = ("spark.authenticate.secret.executor.file", "spark.authenticate.secret.file")
    return not any(conf.get(key) for key in files)


def executor_auth_secret_name(unique_id: str) -> str:
    """``spark-exec-<unique id>-auth-secret``, cut to fit the 253-character name limit."""
    prefix = f"spark-exec-{unique_id}"
    return prefix[: DNS_SUBDOMAIN_MAX_LENGTH - len(_SUFFIX)] + _SUFFIX


def build_executor_auth_secret(
    conf: KubernetesConf,
    *,
    app_id: str,
    name: str,
    secret: str,
    driver_pod: Obj | None,
    heartbeat_lease: str | None = None,
) -> Obj:
    """The immutable Secret holding ``secret`` under :data:`AUTH_SECRET_KEY`."""
    metadata: Obj = {
        "name": name,
        "namespace": conf.namespace,
        "labels": {SPARK_APP_ID_LABEL: app_id, SPARK_ROLE_LABEL: EXECUTOR_ROLE},
    }
    if heartbeat_lease is not None:  # as on the executor pods: gc tells a dead driver's objects by it
        metadata["annotations"] = {HEARTBEAT_LEASE_ANNOTATION: heartbeat_lease}
    if driver_pod is not None:
        metadata["ownerReferences"] = [owner_reference(driver_pod)]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "immutable": True,
        "data": {AUTH_SECRET_KEY: base64.b64encode(secret.encode()).decode("ascii")},
    }


def auth_secret_env(env_name: str, secret_name: str) -> Obj:
    """The container env var that reads the secret from the Secret."""
    return {"name": env_name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": AUTH_SECRET_KEY}}}
