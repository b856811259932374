"""Kubernetes syntax rules for names, label keys and values, and environment variable names.

Each ``*_problem`` function returns None when the text is valid, else a short phrase saying what is
wrong, for the caller to put in a :class:`ConfigError` that also names the Spark key and value.
"""

from __future__ import annotations

import re

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(_DNS_LABEL)
_DNS_SUBDOMAIN_RE = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_LABEL_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SECRET_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")

# Spark's rule for spark.executorEnv.* names (KubernetesExecutorConf.checkExecutorEnvKey), which is
# also the Kubernetes rule for container environment variable names.
ENV_NAME_PATTERN = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_NAME_RE = re.compile(ENV_NAME_PATTERN)


def dns_label_problem(text: str) -> str | None:
    """RFC 1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63."""
    if len(text) > DNS_LABEL_MAX:
        return f"must be at most {DNS_LABEL_MAX} characters (it has {len(text)})"
    if not _DNS_LABEL_RE.fullmatch(text):
        return (
            "must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def dns_subdomain_problem(text: str, max_length: int = DNS_SUBDOMAIN_MAX) -> str | None:
    """RFC 1123 subdomain: dot-separated DNS labels, at most ``max_length`` characters."""
    if len(text) > max_length:
        return f"must be at most {max_length} characters (it has {len(text)})"
    if not _DNS_SUBDOMAIN_RE.fullmatch(text):
        return (
            "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', "
            "each dot-separated part starting and ending with a letter or digit"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """A label (or annotation) key: an optional DNS subdomain prefix and '/', then a name of <= 63."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return "has an empty prefix before '/'"
        problem = dns_subdomain_problem(prefix)
        if problem is not None:
            return f"has a prefix that {problem}"
    if not name:
        return "must have a name (after the optional 'prefix/')"
    if len(name) > DNS_LABEL_MAX:
        return f"must have a name of at most {DNS_LABEL_MAX} characters (it has {len(name)})"
    if not _LABEL_NAME_RE.fullmatch(name):
        return (
            "must have a name of letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """A label value: empty, or at most 63 letters, digits, '-', '_' and '.', alphanumeric at both ends."""
    if value == "":
        return None
    if len(value) > LABEL_VALUE_MAX:
        return f"must be at most {LABEL_VALUE_MAX} characters (it has {len(value)})"
    if not _LABEL_NAME_RE.fullmatch(value):
        return "must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def is_env_name(name: str) -> bool:
    """Whether ``name`` is a valid container environment variable name."""
    return _ENV_NAME_RE.fullmatch(name) is not None


def secret_key_problem(key: str) -> str | None:
    """A key inside a Secret: letters, digits, '-', '_' and '.', at most 253 characters."""
    if len(key) > DNS_SUBDOMAIN_MAX:
        return f"must be at most {DNS_SUBDOMAIN_MAX} characters"
    if not _SECRET_KEY_RE.fullmatch(key):
        return "must be letters, digits, '-', '_' and '.'"
    return None
