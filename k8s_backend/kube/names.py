"""The API server's rules for names: DNS-1123 labels and subdomains, DNS-1035 labels, qualified names
(label keys), label values, ConfigMap/Secret data keys and container environment variable names.

This is the one place these rules are written. Each ``*_errors`` function returns the problems in the
API server's own wording (k8s.io/apimachinery/pkg/util/validation), an empty list when the text is
valid; each ``is_*`` helper says whether that list is empty. The conf checks phrase the same rules for
Spark users, the fake API server answers with these lists, so a rule cannot differ between the two.

It imports nothing from k8s_backend: it sits at the bottom of the layering, like quantity.py.
"""

from __future__ import annotations

import re

# --- limits ----------------------------------------------------------------------------------------

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63  # the name part of a label key, after the optional 'prefix/'
LABEL_VALUE_MAX_LENGTH = 63
CONFIG_KEY_MAX_LENGTH = DNS1123_SUBDOMAIN_MAX_LENGTH  # apimachinery reuses the subdomain limit

# --- patterns, exactly as the server prints them in its messages -----------------------------------

DNS1123_LABEL_PATTERN = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_PATTERN = DNS1123_LABEL_PATTERN + r"(\." + DNS1123_LABEL_PATTERN + ")*"
DNS1035_LABEL_PATTERN = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_PATTERN = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_PATTERN = f"({QUALIFIED_NAME_PATTERN})?"
CONFIG_KEY_PATTERN = "[-._a-zA-Z0-9]+"
# The strict rule (IsEnvVarName); it is also Spark's rule for spark.executorEnv.* names.
ENV_VAR_NAME_PATTERN = "[-._a-zA-Z][-._a-zA-Z0-9]*"

# --- the server's error phrases ---------------------------------------------------------------------

EMPTY_ERROR = "must be non-empty"
DNS1123_LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
DNS1035_LABEL_ERROR = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
QUALIFIED_NAME_ERROR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
LABEL_VALUE_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
CONFIG_KEY_ERROR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
ENV_VAR_NAME_ERROR = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
    "'.', and must not start with a digit"
)


def full_match(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches all of ``text``, as Go's ``^pattern$`` does.

    ``re.fullmatch``, not ``^...$``: Python's ``$`` also matches before a trailing newline, Go's does
    not, so ``"name\\n"`` must be refused. (``re`` caches the compiled patterns.)
    """
    return re.fullmatch(pattern, text) is not None


def max_len_error(length: int) -> str:
    """apimachinery's MaxLenError."""
    return f"must be no more than {length} characters"


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's RegexError, double space before each ``or`` included (the server writes it so)."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _chdir_prefix_errors(text: str) -> list[str]:
    """apimachinery's hasChDirPrefix: keys become file names in volumes, so no '.', '..' or '../x'."""
    if text == ".":
        return ["must not be '.'"]
    if text == "..":
        return ["must not be '..'"]
    if text.startswith(".."):
        return ["must not start with '..'"]
    return []


# --- the rules --------------------------------------------------------------------------------------


def _rule_errors(text: str, max_length: int | None, pattern: str, message: str, *examples: str) -> list[str]:
    """The shape every rule here shares: an optional length limit, then the pattern (both reported)."""
    problems = []
    if max_length is not None and len(text) > max_length:
        problems.append(max_len_error(max_length))
    if not full_match(pattern, text):
        problems.append(regex_error(message, pattern, *examples))
    return problems


def dns1123_label_errors(name: str) -> list[str]:
    """IsDNS1123Label: names of namespaces, services and containers."""
    return _rule_errors(
        name, DNS1123_LABEL_MAX_LENGTH, DNS1123_LABEL_PATTERN, DNS1123_LABEL_ERROR, "my-name", "123-abc"
    )


def dns1123_subdomain_errors(name: str) -> list[str]:
    """IsDNS1123Subdomain: names of most objects (pods, config maps, secrets), label-key prefixes."""
    return _rule_errors(
        name, DNS1123_SUBDOMAIN_MAX_LENGTH, DNS1123_SUBDOMAIN_PATTERN, DNS1123_SUBDOMAIN_ERROR, "example.com"
    )


def dns1035_label_errors(name: str) -> list[str]:
    """IsDNS1035Label: like a DNS-1123 label but starting with a letter (services before 1.34)."""
    return _rule_errors(
        name, DNS1035_LABEL_MAX_LENGTH, DNS1035_LABEL_PATTERN, DNS1035_LABEL_ERROR, "my-name", "abc-123"
    )


def config_key_errors(key: str) -> list[str]:
    """IsConfigMapKey: a key of a ConfigMap's or Secret's data, or of a secretKeyRef."""
    examples = ("key.name", "KEY_NAME", "key-name")
    problems = _rule_errors(key, CONFIG_KEY_MAX_LENGTH, CONFIG_KEY_PATTERN, CONFIG_KEY_ERROR, *examples)
    return problems + _chdir_prefix_errors(key)


def env_var_name_errors(name: str) -> list[str]:
    """IsEnvVarName, the strict rule (servers with RelaxedEnvironmentVariableValidation accept more)."""
    examples = ("my.env-name", "MY_ENV.NAME", "MyEnvName1")
    problems = _rule_errors(name, None, ENV_VAR_NAME_PATTERN, ENV_VAR_NAME_ERROR, *examples)
    return problems + _chdir_prefix_errors(name)


def is_dns1123_label(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 label of at most 63 characters."""
    return not dns1123_label_errors(name)


def is_dns1123_subdomain(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 subdomain of at most 253 characters."""
    return not dns1123_subdomain_errors(name)


def is_dns1035_label(name: str) -> bool:
    """Whether ``name`` is a DNS-1035 label of at most 63 characters."""
    return not dns1035_label_errors(name)


def is_config_key(key: str) -> bool:
    """Whether ``key`` is a valid ConfigMap/Secret data key."""
    return not config_key_errors(key)


def is_env_var_name(name: str) -> bool:
    """Whether ``name`` is a valid container environment variable name (the strict rule)."""
    return not env_var_name_errors(name)
