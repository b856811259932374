"""The cluster-mode driver's secrets: kept out of the ConfigMap, handed over in a Secret.

A ConfigMap is readable by anyone who may read ConfigMaps, so no secret goes into the driver's
``spark.properties``:

- the API token (one given for the driver, or the submission's own when the driver reuses the
  submission's loopback server) is mounted read-only into the driver container from the Secret, and
  the driver's properties name the mounted file instead (``<family>oauthTokenFile``), as Spark's
  DriverKubernetesCredentialsFeatureStep does; so are the CA, client certificate and key such a
  driver needs when the submission's client got them from a kubeconfig (the driver's properties name
  the mounted files, ``spark.kubernetes.authenticate.caCertFile`` and so on);
- every other property whose key ``spark.redaction.regex`` marks as secret (such as
  ``spark.authenticate.secret`` or ``spark.hadoop.fs.s3a.secret.key``; Spark ships these in its
  ConfigMap) travels as a properties text in the Secret, which the driver container reads through a
  ``secretKeyRef`` variable, :data:`SECRET_CONF_ENV`; ``k8s-backend submit`` merges it like a
  properties file.

The Secret is owned by the driver pod, so deleting the pod deletes it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence

from k8s_backend.conf.keys_driver import AUTH_PREFIXES
from k8s_backend.conf.model import DEFAULT_REDACTION_REGEX
from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import owner_reference

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

_SUBMISSION = "spark.kubernetes.authenticate.submission."
_DRIVER_FAMILIES = tuple(p for p in AUTH_PREFIXES if p != _SUBMISSION)
_CREDENTIAL_SUFFIXES = ("oauthToken", "oauthTokenFile", "caCertFile", "clientKeyFile", "clientCertFile")


def is_token_key(key: str) -> bool:
    """Whether ``key`` holds a token value (never written into a ConfigMap)."""
    return key.startswith("spark.kubernetes.authenticate.") and key.endswith("oauthToken")


def move_token_to_file(properties: dict[str, str]) -> tuple[str | None, str | None]:
    """Remove every token value from ``properties``; returns ``(token, key)``: the token the driver
    would use (from the first credentials family with any key set, as the driver reads them) and the
    ``oauthTokenFile`` key now naming :data:`TOKEN_FILE`, or ``(None, None)`` when it needs none."""
    token: str | None = None
    key: str | None = None
    family = _driver_family(properties)
    if family is not None and properties.get(family + "oauthToken"):
        token, key = properties[family + "oauthToken"], family + "oauthTokenFile"
    for name in [k for k in properties if is_token_key(k)]:
        del properties[name]
    if key is not None:
        properties[key] = TOKEN_FILE
    return token, key


def split_secret_properties(properties: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(plain, secret)``: the properties whose key ``spark.redaction.regex`` marks as secret, apart.

    Keys naming a file, or a Kubernetes Secret to mount or reference, hold no secret and stay plain.
    """
    pattern = re.compile(properties.get("spark.redaction.regex") or DEFAULT_REDACTION_REGEX)
    plain: dict[str, str] = {}
    secret: dict[str, str] = {}
    for key, value in properties.items():
        names_no_secret = key.lower().endswith("file") or ".secrets." in key or ".secretKeyRef." in key
        (secret if pattern.search(key) and not names_no_secret else plain)[key] = value
    return plain, secret


def _driver_family(properties: Mapping[str, str]) -> str | None:
    for prefix in _DRIVER_FAMILIES:
        if any(prefix + suffix in properties for suffix in _CREDENTIAL_SUFFIXES):
            return prefix
    return None


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
        key: value.encode()
        for key, value in ((TOKEN_KEY, token), (SECRET_CONF_KEY, secret_conf))
        if value
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


def volume(secret: str, keys: Sequence[str] = (TOKEN_KEY,)) -> Obj:
    """The pod volume projecting the token and credential files ``keys`` from the Secret (Kubernetes'
    default file mode: the image's user, not root, must be able to read them)."""
    return {
        "name": TOKEN_VOLUME,
        "secret": {"secretName": secret, "items": [{"key": key, "path": key} for key in keys]},
    }


def secret_conf_env(secret: str) -> Obj:
    """The driver container's variable holding the secret properties."""
    return {"name": SECRET_CONF_ENV, "valueFrom": {"secretKeyRef": {"name": secret, "key": SECRET_CONF_KEY}}}


def volume_mount() -> Obj:
    return {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_DIR, "readOnly": True}


_CLIENT = "spark.kubernetes.authenticate."
_FILE_SUFFIXES = ("caCertFile", "clientCertFile", "clientKeyFile")

# The files a driver on the submission's loopback server may need besides its token: the property
# suffix naming each, its key in the Secret (and file name under TOKEN_MOUNT_DIR), and the variable
# holding its path in the container.
CREDENTIAL_FILES: dict[str, tuple[str, str]] = {
    "caCertFile": ("ca.crt", "K8S_BACKEND_API_CA_FILE"),
    "clientCertFile": ("client.crt", "K8S_BACKEND_API_CLIENT_CERT_FILE"),
    "clientKeyFile": ("client.key", "K8S_BACKEND_API_CLIENT_KEY_FILE"),
}
# The files the user names with spark.kubernetes.authenticate.driver.* on the submitting machine, read
# at submit time (see :mod:`k8s_backend.cli.submit.driver_credentials`): property suffix -> (Secret item, and
# file name under TOKEN_MOUNT_DIR; the variable holding its path in the container). Named apart from
# CREDENTIAL_FILES, which may travel in the same Secret.
DRIVER_FILES: dict[str, tuple[str, str]] = {
    "oauthTokenFile": ("driver-oauth-token", "K8S_BACKEND_DRIVER_TOKEN_FILE"),
    "caCertFile": ("driver-ca.crt", "K8S_BACKEND_DRIVER_CA_FILE"),
    "clientCertFile": ("driver-client.crt", "K8S_BACKEND_DRIVER_CLIENT_CERT_FILE"),
    "clientKeyFile": ("driver-client.key", "K8S_BACKEND_DRIVER_CLIENT_KEY_FILE"),
}
TOKEN_FILE_KEY_ENV = (TOKEN_KEY, TOKEN_FILE_ENV)
TRUST_KEY = "spark.kubernetes.trust.certificates"


def loopback_credentials(
    properties: Mapping[str, str],
    submission_token: str | None,
    files: Mapping[str, bytes] | None = None,
    *,
    verify_tls: bool = True,
) -> tuple[dict[str, str], dict[str, bytes]]:
    """What a driver reusing the submission's loopback server needs to reach it, as the driver's own
    (client-mode) credentials: ``(properties, contents)``, nothing when the user gave the driver
    credentials of its own.

    The token travels as before (a token file by path, a token value through the Secret). A CA, client
    certificate or key given as a property is passed by path (the driver runs on this machine); one the
    submission's client got elsewhere (a kubeconfig's ``certificate-authority[-data]``,
    ``client-certificate[-data]``, ``client-key[-data]``: ``files``, keyed by property suffix) has its
    content returned, to be shipped in the driver's Secret (see :func:`mount_files`). A submission
    that does not check the server's certificate (``verify_tls`` false: a kubeconfig's
    ``insecure-skip-tls-verify``) has its driver not check it either.
    """
    out: dict[str, str] = {}
    if not verify_tls and TRUST_KEY not in properties:
        out[TRUST_KEY] = "true"
    if _has_client_credentials(properties):
        return out, {}
    reused = {"oauthToken": submission_token} if submission_token else {}
    for suffix in ("oauthToken", "oauthTokenFile", *_FILE_SUFFIXES):
        value = properties.get(_SUBMISSION + suffix) or properties.get(_CLIENT + suffix) or reused.get(suffix)
        if value:
            out[_CLIENT + suffix] = value
    contents = {
        suffix: content
        for suffix, content in (files or {}).items()
        if suffix in CREDENTIAL_FILES and content and _CLIENT + suffix not in out
    }
    if "clientKeyFile" in contents and "clientCertFile" not in out and "clientCertFile" not in contents:
        del contents["clientKeyFile"]  # a key alone is no credential
    return out, contents


def mount_files(
    properties: dict[str, str], contents: Mapping[str, bytes], family: str = _CLIENT
) -> dict[str, str]:
    """Point the driver's credential keys of ``family`` at the files of ``contents`` mounted from the
    Secret; returns property key -> the variable holding the mounted file's path (the driver's
    arguments name ``$(VAR)`` so that a kubelet on this host substitutes its local path)."""
    variables: dict[str, str] = {}
    for suffix in contents:
        key, variable = CREDENTIAL_FILES[suffix]
        properties[family + suffix] = f"{TOKEN_MOUNT_DIR}/{key}"
        variables[family + suffix] = variable
    return variables


def secret_files(contents: Mapping[str, bytes]) -> dict[str, bytes]:
    """The Secret's items for ``contents`` (property suffix -> content): file name -> content."""
    return {CREDENTIAL_FILES[suffix][0]: content for suffix, content in contents.items()}


def mounted_env(keys: Sequence[str]) -> list[Obj]:
    """The variables naming the mounted files of the Secret items ``keys``."""
    variables = dict([TOKEN_FILE_KEY_ENV, *CREDENTIAL_FILES.values(), *DRIVER_FILES.values()])
    return [{"name": variables[key], "value": f"{TOKEN_MOUNT_DIR}/{key}"} for key in keys]


def _has_client_credentials(props: Mapping[str, str]) -> bool:
    return any(
        k.startswith("spark.kubernetes.authenticate.") and not k.startswith(_SUBMISSION)
        for k in props
        if k.endswith(("oauthToken", "oauthTokenFile", "clientCertFile"))
    )
