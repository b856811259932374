"""Spark's DriverKubernetesCredentialsFeatureStep: the ``driver.*`` credentials of a cluster-mode driver.

``spark.kubernetes.authenticate.driver.{oauthTokenFile,caCertFile,clientCertFile,clientKeyFile}`` name
files on the submitting machine, which do not exist in the driver's pod. They are read at submit time (a
missing or unreadable one is a usage error naming the key and path, before anything is created), shipped
in the driver's Secret (:mod:`k8s_backend.pods.driver.credential_files`; items ``driver-ca.crt`` and so
on) mounted into the driver container, and the driver's properties name the mounted files as
``spark.kubernetes.authenticate.driver.mounted.*``, the family a cluster-mode driver reads. The whole
``driver.*`` family moves there (an ``oauthToken`` value too, which then travels as the Secret's token);
a ``driver.mounted.*`` key the user gave (already a path inside the pod) is left untouched and wins over
its ``driver.*`` counterpart, as in Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.pods.driver.credential_files import DRIVER as DRIVER_SOURCE
from k8s_backend.pods.driver.credential_files import FAMILY_SUFFIXES, point_at_mounted, suffixes
from k8s_backend.pods.driver.credential_files import secret_items as _secret_items

CLIENT = "spark.kubernetes.authenticate."
DRIVER = "spark.kubernetes.authenticate.driver."
MOUNTED = "spark.kubernetes.authenticate.driver.mounted."
_TOKEN_SUFFIXES = ("oauthToken", "oauthTokenFile")


def read_driver_files(properties: Mapping[str, str]) -> dict[str, bytes]:
    """The contents of the files the ``driver.*`` family names, by property suffix (those a
    ``driver.mounted.*`` key replaces are not read); a usage error for one that cannot be read."""
    if all(DRIVER + suffix in properties for suffix in _TOKEN_SUFFIXES):
        raise UsageError(
            f"Cannot specify OAuth token through both a file {DRIVER}oauthTokenFile and a value "
            f"{DRIVER}oauthToken; keep one of them"
        )
    contents: dict[str, bytes] = {}
    for suffix in suffixes(DRIVER_SOURCE):
        path = properties.get(DRIVER + suffix)
        if path and not _mounted_given(properties, suffix):
            contents[suffix] = _read(DRIVER + suffix, path)
    return contents


def to_mounted_family(properties: dict[str, str], contents: Mapping[str, bytes]) -> dict[str, str]:
    """Move the ``driver.*`` keys of ``properties`` to ``driver.mounted.*`` when there is a file to ship
    (``contents``, from :func:`read_driver_files`) or the user gave ``driver.mounted.*`` keys; returns
    property key -> the variable holding the mounted file's path (see ``driver_pod.driver_args``)."""
    if not contents and not _has_mounted(properties):
        return {}  # the driver reads the driver.* family itself (a token value is mounted as before)
    shipped: list[str] = []
    for suffix in FAMILY_SUFFIXES:
        value = properties.pop(DRIVER + suffix, None)
        if value is None or _mounted_given(properties, suffix):
            continue
        if suffix == "oauthToken":
            properties[MOUNTED + suffix] = value  # the Secret's token (driver_token.move_token_to_file)
        elif suffix in contents:
            shipped.append(suffix)
    return point_at_mounted(properties, MOUNTED, DRIVER_SOURCE, shipped)


def secret_items(contents: Mapping[str, bytes]) -> dict[str, bytes]:
    """The Secret's items for ``contents`` (property suffix -> content): item name -> content."""
    return _secret_items(DRIVER_SOURCE, contents)


def join_mounted_family(
    properties: Mapping[str, str], borrowed: Mapping[str, str], shipped: Mapping[str, bytes]
) -> tuple[dict[str, str], dict[str, bytes], str]:
    """A loopback driver's borrowed credentials (``spark.kubernetes.authenticate.*`` keys, see
    ``driver_token.loopback_credentials``) join the ``driver.mounted.*`` family when ``properties`` hold
    one (the driver reads only the first family with a key set), for the suffixes it lacks: a user's CA
    given as ``driver.caCertFile`` still goes with the kubeconfig's token. Returns ``(borrowed, shipped,
    family the shipped files are named in)``."""
    if not _has_mounted(properties):
        return dict(borrowed), dict(shipped), CLIENT
    joined: dict[str, str] = {}
    for key, value in borrowed.items():
        if not key.startswith(CLIENT):
            joined[key] = value  # spark.kubernetes.trust.certificates
        elif not _mounted_given(properties, key.removeprefix(CLIENT)):
            joined[MOUNTED + key.removeprefix(CLIENT)] = value
    kept = {suffix: content for suffix, content in shipped.items() if MOUNTED + suffix not in properties}
    return joined, kept, MOUNTED


def _has_mounted(properties: Mapping[str, str]) -> bool:
    return any(MOUNTED + suffix in properties for suffix in FAMILY_SUFFIXES)


def _mounted_given(properties: Mapping[str, str], suffix: str) -> bool:
    alike = _TOKEN_SUFFIXES if suffix in _TOKEN_SUFFIXES else (suffix,)
    return any(MOUNTED + s in properties for s in alike)


def _read(key: str, path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as error:
        raise UsageError(
            f"{key}={path}: cannot read the file ({error.strerror or error}); a cluster-mode driver's "
            f"credential files are read on this machine and shipped in a Secret: name a readable file, "
            f"or use {MOUNTED}{key.removeprefix(DRIVER)} for a file already in the driver's pod"
        ) from None
