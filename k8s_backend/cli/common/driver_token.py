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

import re
from collections.abc import Mapping

from k8s_backend.conf.keys_driver import AUTH_PREFIXES
from k8s_backend.conf.model import DEFAULT_REDACTION_REGEX
from k8s_backend.pods.driver.credential_files import (
    FAMILY_SUFFIXES,
    LOOPBACK,
    SECRET_CONF_ENV,
    SECRET_CONF_KEY,
    TOKEN_FILE,
    TOKEN_FILE_ENV,
    TOKEN_KEY,
    TOKEN_MOUNT_DIR,
    build_secret,
    point_at_mounted,
    secret_items,
    secret_name,
    suffixes,
)

# The Secret's names and builder live with the driver pod's credentials step (pods/driver); the
# submission's side of the credentials (which token, which files, which properties are secret) is here.
__all__ = [
    "SECRET_CONF_ENV",
    "SECRET_CONF_KEY",
    "TOKEN_FILE",
    "TOKEN_FILE_ENV",
    "TOKEN_KEY",
    "TOKEN_MOUNT_DIR",
    "build_secret",
    "is_token_key",
    "loopback_credentials",
    "mount_files",
    "move_token_to_file",
    "secret_files",
    "secret_name",
    "split_secret_properties",
]

_SUBMISSION = "spark.kubernetes.authenticate.submission."
_DRIVER_FAMILIES = tuple(p for p in AUTH_PREFIXES if p != _SUBMISSION)


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
        if any(prefix + suffix in properties for suffix in FAMILY_SUFFIXES):
            return prefix
    return None


_CLIENT = "spark.kubernetes.authenticate."
_LOOPBACK_FILES = suffixes(LOOPBACK)

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
    for suffix in ("oauthToken", "oauthTokenFile", *_LOOPBACK_FILES):
        value = properties.get(_SUBMISSION + suffix) or properties.get(_CLIENT + suffix) or reused.get(suffix)
        if value:
            out[_CLIENT + suffix] = value
    contents = {
        suffix: content
        for suffix, content in (files or {}).items()
        if suffix in _LOOPBACK_FILES and content and _CLIENT + suffix not in out
    }
    if "clientKeyFile" in contents and "clientCertFile" not in out and "clientCertFile" not in contents:
        del contents["clientKeyFile"]  # a key alone is no credential
    return out, contents


def mount_files(
    properties: dict[str, str], contents: Mapping[str, bytes], family: str = _CLIENT
) -> dict[str, str]:
    """Point the driver's credential keys of ``family`` at the files of ``contents`` mounted from the
    Secret; returns property key -> the variable holding the mounted file's path."""
    return point_at_mounted(properties, family, LOOPBACK, contents)


def secret_files(contents: Mapping[str, bytes]) -> dict[str, bytes]:
    """The Secret's items for ``contents`` (property suffix -> content): file name -> content."""
    return secret_items(LOOPBACK, contents)


def _has_client_credentials(props: Mapping[str, str]) -> bool:
    return any(
        k.startswith("spark.kubernetes.authenticate.") and not k.startswith(_SUBMISSION)
        for k in props
        if k.endswith(("oauthToken", "oauthTokenFile", "clientCertFile"))
    )
