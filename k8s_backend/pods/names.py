"""Name rules: application ids, resource name prefixes, pod names, hostnames, DNS-1123 checks.

The rules are Spark's (``KubernetesConf.getKubernetesAppId``, ``getResourceNamePrefix``,
``getAppNameLabel``, ``KubernetesUtils.uniqueID`` and the hostname rule of the basic executor step).
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable

from k8s_backend.common.clock import Clock, SystemClock
from k8s_backend.errors import ConfigError
from k8s_backend.kube import names as kube_names
from k8s_backend.pods.constants import (
    APP_ID_PLACEHOLDER,
    DNS_LABEL_MAX_LENGTH,
    DNS_SUBDOMAIN_MAX_LENGTH,
    EXECUTOR_ID_PLACEHOLDER,
    POD_NAME_PREFIX_MAX_LENGTH,
)

_NAMES_DOC = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/"
POD_NAME_PREFIX_KEY = "spark.kubernetes.executor.podNamePrefix"


def is_dns1123_label(value: str) -> bool:
    """A DNS-1123 label: lowercase alphanumerics and '-', alphanumeric at both ends, at most 63 chars."""
    return kube_names.is_dns1123_label(value)


def is_dns1123_subdomain(value: str) -> bool:
    """A DNS-1123 subdomain: dot-separated labels, at most 253 characters (what pod names must be)."""
    return kube_names.is_dns1123_subdomain(value)


def validate_pod_name_prefix(prefix: str) -> str:
    """Check ``spark.kubernetes.executor.podNamePrefix`` as Spark does; returns it unchanged."""
    if not is_dns1123_subdomain(prefix) or len(prefix) > POD_NAME_PREFIX_MAX_LENGTH:
        raise ConfigError(
            f"{POD_NAME_PREFIX_KEY}={prefix!r} is invalid: it must be a DNS-1123 subdomain (lowercase "
            f"letters, digits, '-' and '.', starting and ending with a letter or digit; see {_NAMES_DOC}) "
            f"of at most {POD_NAME_PREFIX_MAX_LENGTH} characters",
            key=POD_NAME_PREFIX_KEY,
            value=prefix,
        )
    # Spark accepts dots here, but the hostname of every executor pod is derived from its name with
    # dots turned into '_', which no API server accepts: refuse it now rather than fail every create.
    hostname = executor_hostname(f"{prefix}-exec-1")
    if not is_dns1123_label(hostname):
        raise ConfigError(
            f"{POD_NAME_PREFIX_KEY}={prefix!r} is invalid: executor hostnames are derived from it "
            f"({hostname!r} for executor 1) and must be DNS-1123 labels; use lowercase letters, digits "
            "and '-' only (no '.')",
            key=POD_NAME_PREFIX_KEY,
            value=prefix,
        )
    return prefix


def new_app_id() -> str:
    """A fresh application id: ``spark-`` and 32 hex digits (Spark's getKubernetesAppId)."""
    return f"spark-{uuid.uuid4().hex}"


def unique_id(*, random_bytes: Callable[[int], bytes] | None = None, clock: Clock | None = None) -> str:
    """Spark's uniqueID: 3 random bytes in hex, then the low 40 bits of the epoch milliseconds in hex."""
    draw = random_bytes if random_bytes is not None else secrets.token_bytes
    now = clock if clock is not None else SystemClock()
    millis = int(now.now() * 1000) & 0xFFFFFFFFFF
    return draw(3).hex() + format(millis, "x")


def resource_name_prefix(
    app_name: str,
    *,
    random_bytes: Callable[[int], bytes] | None = None,
    clock: Clock | None = None,
) -> str:
    """The default executor pod name prefix: ``<app name>-<unique id>``, sanitized as Spark does.

    Lower-cased; characters other than ``[a-z0-9-]`` become ``-``; runs of ``-`` collapse; a leading
    ``-`` is removed and a leading digit becomes ``x``.
    """
    raw = f"{app_name}-{unique_id(random_bytes=random_bytes, clock=clock)}"
    prefix = re.sub(r"[^a-z0-9\-]", "-", raw.strip().lower())
    prefix = re.sub(r"-+", "-", prefix)
    prefix = re.sub(r"^-", "", prefix)
    return re.sub(r"^[0-9]", "x", prefix)


def app_name_label(app_name: str) -> str:
    """The ``spark-app-name`` label value: sanitized like the prefix, cut to 63, no '-' at either end."""
    label = re.sub(r"[^a-z0-9\-]", "-", app_name.strip().lower())
    label = re.sub(r"-+", "-", label)[:DNS_LABEL_MAX_LENGTH]
    label = label.removeprefix("-")
    return label.removesuffix("-")


def executor_pod_name(prefix: str, executor_id: int | str) -> str:
    """``<prefix>-exec-<id>``."""
    return f"{prefix}-exec-{executor_id}"


def executor_hostname(pod_name: str) -> str:
    """Spark's hostname rule: the last 63 characters of the pod name, leading non-word characters
    removed, other runs of characters outside ``[A-Za-z0-9_-]`` replaced by ``_``.

    The end of the name carries the executor id, so keeping the tail keeps hostnames unique.
    """
    tail = pod_name[-DNS_LABEL_MAX_LENGTH:]
    tail = re.sub(r"^[^\w]+", "", tail, flags=re.ASCII)
    return re.sub(r"[^\w-]+", "_", tail, flags=re.ASCII)


def substitute_ids(value: str, app_id: str, executor_id: int | str) -> str:
    """Replace ``{{APP_ID}}`` and ``{{EXECUTOR_ID}}`` (Spark's substituteAppNExecIds)."""
    return value.replace(APP_ID_PLACEHOLDER, app_id).replace(EXECUTOR_ID_PLACEHOLDER, str(executor_id))


def check_executor_names(pod_name: str, hostname: str) -> None:
    """Raise :class:`ConfigError` unless the pod name and hostname are valid Kubernetes names."""
    if not is_dns1123_subdomain(pod_name):
        raise ConfigError(
            f"executor pod name {pod_name!r} is not a valid Kubernetes object name (a DNS-1123 subdomain "
            f"of at most {DNS_SUBDOMAIN_MAX_LENGTH} characters; see {_NAMES_DOC}); set "
            f"{POD_NAME_PREFIX_KEY} to a shorter prefix of lowercase letters, digits and '-'",
            key=POD_NAME_PREFIX_KEY,
            value=pod_name,
        )
    if not is_dns1123_label(hostname):
        raise ConfigError(
            f"executor hostname {hostname!r} (derived from pod name {pod_name!r}) is not a DNS-1123 "
            f"label; set {POD_NAME_PREFIX_KEY} to a prefix of lowercase letters, digits and '-' only "
            "(no '.')",
            key=POD_NAME_PREFIX_KEY,
            value=pod_name,
        )
