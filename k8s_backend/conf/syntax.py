"""Kubernetes syntax rules for names, label keys and values, annotations, environment variable names,
image names and resource names.

Each ``*_problem`` function returns None when the text is valid, else a short phrase saying what is
wrong, for the caller to put in a :class:`ConfigError` that also names the Spark key and value.
"""

from __future__ import annotations

from collections.abc import Mapping

from k8s_backend.kube import names
from k8s_backend.kube.labels import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    annotations_size,
    annotations_size_errors,
    extended_resource_name_errors,
    label_key_errors,
    label_value_errors,
)

# Whether a text is valid is decided by the API server's rules (kube/names.py, kube/labels.py); only the
# phrasing is this module's, so a conf check cannot accept what the API server refuses, or the reverse.
DNS_LABEL_MAX = names.DNS1123_LABEL_MAX_LENGTH
DNS_SUBDOMAIN_MAX = names.DNS1123_SUBDOMAIN_MAX_LENGTH
LABEL_VALUE_MAX = names.LABEL_VALUE_MAX_LENGTH

# The regex of Spark's rule for spark.executorEnv.* names (KubernetesExecutorConf.checkExecutorEnvKey),
# which is also the regex of the Kubernetes rule; is_env_name also refuses '.', '..' and '..x', as the
# API server's strict rule (IsEnvVarName) does.
ENV_NAME_PATTERN = names.ENV_VAR_NAME_PATTERN


def dns_label_problem(text: str) -> str | None:
    """RFC 1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63."""
    if len(text) > DNS_LABEL_MAX:
        return f"must be at most {DNS_LABEL_MAX} characters (it has {len(text)})"
    if not names.is_dns1123_label(text):
        return (
            "must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_subdomain_problem(text: str, max_length: int = DNS_SUBDOMAIN_MAX) -> str | None:
    """RFC 1123 subdomain: dot-separated DNS labels, at most ``max_length`` characters."""
    if len(text) > max_length:
        return f"must be at most {max_length} characters (it has {len(text)})"
    # The pattern alone: max_length may be tighter than the server's 253 (a pod name prefix).
    if not names.full_match(names.DNS1123_SUBDOMAIN_PATTERN, text):
        return (
            "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', "
            "each dot-separated part starting and ending with a letter or digit"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """A label (or annotation) key: an optional DNS subdomain prefix and '/', then a name of <= 63."""
    if not label_key_errors(key):
        return None
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return "has an empty prefix before '/'"
        problem = dns_subdomain_problem(prefix)
        if problem is not None:
            return f"has a prefix that {problem}"
    if not name:
        return "must have a name (after the optional 'prefix/')"
    limit = names.QUALIFIED_NAME_MAX_LENGTH
    if len(name) > limit:
        return f"must have a name of at most {limit} characters (it has {len(name)})"
    return (
        "must have a name of letters, digits, '-', '_' and '.', "
        "starting and ending with a letter or digit"
    )


def label_value_problem(value: str) -> str | None:
    """A label value: empty, or at most 63 letters, digits, '-', '_' and '.', alphanumeric at both ends."""
    if not label_value_errors(value):
        return None
    if len(value) > LABEL_VALUE_MAX:
        return f"must be at most {LABEL_VALUE_MAX} characters (it has {len(value)})"
    return "must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def is_env_name(name: str) -> bool:
    """Whether ``name`` is a valid container environment variable name (the strict Kubernetes rule)."""
    return names.is_env_var_name(name)


def secret_key_problem(key: str) -> str | None:
    """A key inside a Secret: letters, digits, '-', '_' and '.', at most 253 characters, not '.', '..'
    nor starting with '..' (the key becomes a file name when the Secret is mounted)."""
    if names.is_config_key(key):
        return None
    if len(key) > names.CONFIG_KEY_MAX_LENGTH:
        return f"must be at most {names.CONFIG_KEY_MAX_LENGTH} characters"
    if not names.full_match(names.CONFIG_KEY_PATTERN, key):
        return "must be letters, digits, '-', '_' and '.'"
    return "must not be '.' or '..', nor start with '..'"


def annotations_size_problem(annotations: Mapping[str, str]) -> str | None:
    """All of one object's annotations (keys and values) must fit in 256 KiB, as the API server counts."""
    if not annotations_size_errors(annotations):
        return None
    return (
        f"the annotations take {annotations_size(annotations)} bytes (keys and values); the API server "
        f"accepts at most {TOTAL_ANNOTATION_SIZE_LIMIT} (256 KiB) per object"
    )


def image_problem(image: str) -> str | None:
    """A container image reference: not blank, no whitespace.

    The API server refuses leading or trailing whitespace; it accepts whitespace inside, but no image
    reference can contain it, so the kubelet fails every pod with InvalidImageName: refused here too.
    """
    if not image.strip():
        return "must not be empty (leave the key unset instead)"
    if any(char.isspace() for char in image):
        return "must not contain whitespace (an image reference such as registry/spark:4.3.0 has none)"
    return None


def extended_resource_problem(name: str) -> str | None:
    """A custom resource requested as ``<vendor>/<name>``: a qualified name outside the ``requests.``
    prefix (the API server's extended resource rule)."""
    if not extended_resource_name_errors(name):
        return None
    problem = label_key_problem(name)
    if problem is not None:
        return problem
    return "must not start with 'requests.' and must stay a valid name with 'requests.' put before it"
