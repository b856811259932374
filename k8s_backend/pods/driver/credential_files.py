"""The credential files a cluster-mode driver reads from its Secret: one table, one mount function.

The Secret (``<driver pod>-token``, owned by the driver pod) holds the driver's API token, its secret
properties, and the credential files it needs: those of the submission that a driver on the
submission's loopback server reuses (a kubeconfig's CA, client certificate and key), and those the user
names with ``spark.kubernetes.authenticate.driver.*`` on the submitting machine (Spark's
DriverKubernetesCredentialsFeatureStep). :data:`CREDENTIAL_FILES` says, for each, its Secret item (the
file name under :data:`TOKEN_MOUNT_DIR`) and the variable holding its path in the driver container;
:func:`point_at_mounted` is the one place the driver's properties are pointed at the mounted files, and
:func:`mount_credentials` the one place they are mounted into the driver container.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence

import attrs

from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, owner_reference, upsert_env
from k8s_backend.pods.step import SparkPod

TOKEN_VOLUME = "k8s-backend-api-token"
TOKEN_MOUNT_DIR = "/opt/spark/secrets/k8s-token"
TOKEN_KEY = "token"
TOKEN_FILE = f"{TOKEN_MOUNT_DIR}/{TOKEN_KEY}"
TOKEN_FILE_ENV = "K8S_BACKEND_API_TOKEN_FILE"
"""Holds :data:`TOKEN_FILE`; the driver's arguments name ``$(K8S_BACKEND_API_TOKEN_FILE)`` so that a
kubelet running the pod on this host (a local cluster) substitutes the file's local path."""

SECRET_CONF_KEY = "spark-secret.properties"
SECRET_CONF_ENV = "K8S_BACKEND_SECRET_CONF"
"""The driver container's variable holding the secret properties (Java properties text)."""

# Where a file comes from (the table's first column).
TOKEN = "token"
"""The token value the driver uses, of whichever credentials family (named as its ``oauthTokenFile``)."""
LOOPBACK = "loopback"
"""The submission's own files, which a driver on the submission's loopback server reuses."""
DRIVER = "driver"
"""The files ``spark.kubernetes.authenticate.driver.*`` names on the submitting machine."""


@attrs.frozen
class CredentialFile:
    """One file of the driver's Secret: where it comes from, the property suffix naming it, its Secret
    item (and file name under :data:`TOKEN_MOUNT_DIR`), and the variable holding its path."""

    source: str
    suffix: str
    item: str
    env: str

    @property
    def path(self) -> str:
        """Where the driver container finds the file."""
        return f"{TOKEN_MOUNT_DIR}/{self.item}"


CREDENTIAL_FILES: tuple[CredentialFile, ...] = (
    CredentialFile(TOKEN, "oauthTokenFile", TOKEN_KEY, TOKEN_FILE_ENV),
    CredentialFile(LOOPBACK, "caCertFile", "ca.crt", "K8S_BACKEND_API_CA_FILE"),
    CredentialFile(LOOPBACK, "clientCertFile", "client.crt", "K8S_BACKEND_API_CLIENT_CERT_FILE"),
    CredentialFile(LOOPBACK, "clientKeyFile", "client.key", "K8S_BACKEND_API_CLIENT_KEY_FILE"),
    # Named apart from the loopback files, which may travel in the same Secret.
    CredentialFile(DRIVER, "oauthTokenFile", "driver-oauth-token", "K8S_BACKEND_DRIVER_TOKEN_FILE"),
    CredentialFile(DRIVER, "caCertFile", "driver-ca.crt", "K8S_BACKEND_DRIVER_CA_FILE"),
    CredentialFile(DRIVER, "clientCertFile", "driver-client.crt", "K8S_BACKEND_DRIVER_CLIENT_CERT_FILE"),
    CredentialFile(DRIVER, "clientKeyFile", "driver-client.key", "K8S_BACKEND_DRIVER_CLIENT_KEY_FILE"),
)
_BY_SOURCE = {(f.source, f.suffix): f for f in CREDENTIAL_FILES}
_BY_ITEM = {f.item: f for f in CREDENTIAL_FILES}


def suffixes(source: str) -> tuple[str, ...]:
    """The property suffixes of the files ``source`` ships, in the table's order."""
    return tuple(f.suffix for f in CREDENTIAL_FILES if f.source == source)


FAMILY_SUFFIXES = ("oauthToken", *suffixes(DRIVER))
"""The keys of one credentials family (``spark.kubernetes.authenticate.driver.`` and so on): the token
value, then the files of the table."""


def credential_file(source: str, suffix: str) -> CredentialFile:
    """The table's row for the file of ``source`` the property suffix ``suffix`` names."""
    return _BY_SOURCE[(source, suffix)]


def secret_items(source: str, contents: Mapping[str, bytes]) -> dict[str, bytes]:
    """The Secret's items for ``contents`` of ``source`` (property suffix -> content): item -> content."""
    return {credential_file(source, suffix).item: content for suffix, content in contents.items()}


def point_at_mounted(
    properties: dict[str, str], family: str, source: str, suffixes: Iterable[str]
) -> dict[str, str]:
    """Point the keys ``<family><suffix>`` of ``properties`` at the mounted files of ``source``; returns
    property key -> the variable holding the mounted file's path (the driver's arguments name ``$(VAR)``
    so that a kubelet on this host substitutes its local path)."""
    variables: dict[str, str] = {}
    for suffix in suffixes:
        row = credential_file(source, suffix)
        properties[family + suffix] = row.path
        variables[family + suffix] = row.env
    return variables


def mount_credentials(pod: SparkPod, secret: str, items: Sequence[str]) -> SparkPod:
    """The pod with the Secret's ``items`` mounted read-only at :data:`TOKEN_MOUNT_DIR` and the variables
    naming them set (Kubernetes' default file mode: the image's user, not root, must read them)."""
    pod = pod.copy()
    upsert_env(pod.container, [{"name": _BY_ITEM[item].env, "value": _BY_ITEM[item].path} for item in items])
    add_volume_mounts(pod.container, [{"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_DIR, "readOnly": True}])
    add_volumes(
        pod.pod,
        [
            {
                "name": TOKEN_VOLUME,
                "secret": {"secretName": secret, "items": [{"key": k, "path": k} for k in items]},
            }
        ],
    )
    return pod


def secret_conf_env(secret: str) -> Obj:
    """The driver container's variable holding the secret properties."""
    return {"name": SECRET_CONF_ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": SECRET_CONF_KEY}}}


def secret_name(pod_name: str, fallback_prefix: str) -> str:
    """``<driver pod>-token``, or ``<fallback_prefix>-token`` when that would be too long."""
    name = f"{pod_name}-token"
    return name if len(name) <= 253 else f"{fallback_prefix}-token"


def build_secret(
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    driver_pod: Obj,
    *,
    token: str | None,
    secret_conf: str | None,
    files: Mapping[str, bytes] | None = None,
) -> Obj:
    """The Secret holding the driver's token, secret properties and credential ``files`` (item name ->
    content), owned by the driver pod."""
    data = {
        key: value.encode() for key, value in ((TOKEN_KEY, token), (SECRET_CONF_KEY, secret_conf)) if value
    }
    data.update(files or {})
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "ownerReferences": [owner_reference(driver_pod)],
        },
        "type": "Opaque",
        "immutable": True,
        "data": {key: base64.b64encode(value).decode("ascii") for key, value in data.items()},
    }
