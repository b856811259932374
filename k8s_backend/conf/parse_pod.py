"""Key families that shape executor pods: labels, annotations, node selectors, environment, secrets,
custom resources and off-heap memory.

Each function takes the raw Spark properties and returns the value of one model field, raising
:class:`ConfigError` (naming the key and value) for values Kubernetes or Spark would refuse.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from k8s_backend.conf import syntax
from k8s_backend.conf.keys import key
from k8s_backend.conf.model import ResourceRequest
from k8s_backend.conf.units import SIZE_UNITS, parse_int
from k8s_backend.errors import ConfigError

log = logging.getLogger(__name__)

LABEL_PREFIX = "spark.kubernetes.executor.label."
ANNOTATION_PREFIX = "spark.kubernetes.executor.annotation."
NODE_SELECTOR_PREFIX = "spark.kubernetes.node.selector."
EXECUTOR_NODE_SELECTOR_PREFIX = "spark.kubernetes.executor.node.selector."
ENV_PREFIX = "spark.executorEnv."
SECRETS_PREFIX = "spark.kubernetes.executor.secrets."
SECRET_KEY_REF_PREFIX = "spark.kubernetes.executor.secretKeyRef."
RESOURCE_PREFIX = "spark.executor.resource."

# Labels Spark puts on every executor pod; users may not set them (KubernetesExecutorConf.labels).
RESERVED_LABELS = (
    "spark-app-selector",
    "spark-role",
    "spark-exec-id",
    "spark-exec-resourceprofile-id",
    "spark-app-name",
    "spark-version",
)
APP_ID_PLACEHOLDER = "{{APP_ID}}"
EXECUTOR_ID_PLACEHOLDER = "{{EXECUTOR_ID}}"
# What a generated application id looks like (spark-<32 hex digits>), to check label values before
# the real id is known.
_SAMPLE_APP_ID = "spark-" + "0" * 32
_RESOURCE_OPTIONS = ("amount", "vendor", "discoveryScript")


def with_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """``{rest: value}`` for every key ``prefix + rest`` (``rest`` not empty), sorted by key."""
    return {
        k[len(prefix) :]: v for k, v in sorted(props.items()) if k.startswith(prefix) and len(k) > len(prefix)
    }


def _invalid(full_key: str, value: str, why: str) -> ConfigError:
    return ConfigError(f"{full_key}={value} is invalid: {why}", key=full_key, value=value)


def _check_label(full_key: str, name: str, value: str, app_id: str | None, what: str) -> None:
    problem = syntax.label_key_problem(name)
    if problem is not None:
        raise _invalid(full_key, value, f"the {what} key {name!r} {problem}")
    sample = _with_sample_ids(value, app_id)
    problem = syntax.label_value_problem(sample)
    if problem is not None:
        substituted = " (once {{APP_ID}} and {{EXECUTOR_ID}} are replaced)" if sample != value else ""
        raise _invalid(full_key, value, f"the {what} value{substituted} {problem}")


def pod_labels(props: Mapping[str, str], app_id: str | None) -> dict[str, str]:
    """``spark.kubernetes.executor.label.*``; Spark's own label keys are refused as Spark does."""
    found = with_prefix(props, LABEL_PREFIX)
    for name, value in found.items():
        full_key = LABEL_PREFIX + name
        if name in RESERVED_LABELS:
            raise ConfigError(
                f"{full_key}={value}: Custom executor labels cannot contain {name} as it is reserved for "
                f"Spark. Remove {full_key}.",
                key=full_key,
                value=value,
            )
        _check_label(full_key, name, value, app_id, "label")
    return found


def pod_annotations(props: Mapping[str, str]) -> dict[str, str]:
    """``spark.kubernetes.executor.annotation.*`` (keys checked, values free text, 256 KiB in all)."""
    found = with_prefix(props, ANNOTATION_PREFIX)
    for name, value in found.items():
        problem = syntax.label_key_problem(name)
        if problem is not None:
            raise _invalid(ANNOTATION_PREFIX + name, value, f"the annotation key {name!r} {problem}")
    check_annotations_size(ANNOTATION_PREFIX, found)
    return found


def check_annotations_size(prefix: str, annotations: Mapping[str, str]) -> None:
    """Refuse annotations (ids substituted as in pods) that the API server finds too big in total."""
    sample = {k: _with_sample_ids(v) for k, v in annotations.items()}
    problem = syntax.annotations_size_problem(sample)
    if problem is not None:
        biggest = max(sample, key=lambda k: len(k) + len(sample[k]))
        raise ConfigError(
            f"{prefix}*: {problem}; shorten or remove some, e.g. {prefix}{biggest}",
            key=prefix + biggest,
            value=annotations[biggest],
        )


def _with_sample_ids(value: str, app_id: str | None = None) -> str:
    """``value`` as it will be in a pod, for checking before the ids are known."""
    return value.replace(APP_ID_PLACEHOLDER, app_id or _SAMPLE_APP_ID).replace(EXECUTOR_ID_PLACEHOLDER, "1")


def node_selector(props: Mapping[str, str]) -> dict[str, str]:
    """The global node selector overlaid with the executor one (executor entries win)."""
    merged: dict[str, str] = {}
    for prefix in (NODE_SELECTOR_PREFIX, EXECUTOR_NODE_SELECTOR_PREFIX):
        for name, value in with_prefix(props, prefix).items():
            _check_label(prefix + name, name, value, None, "node selector")
            merged[name] = value
    return merged


def environment(props: Mapping[str, str]) -> dict[str, str]:
    """``spark.executorEnv.*``; names Kubernetes would refuse are dropped with a warning, as Spark does."""
    kept: dict[str, str] = {}
    for name, value in with_prefix(props, ENV_PREFIX).items():
        if syntax.is_env_name(name):
            kept[name] = value
        else:
            log.warning(
                "Invalid key: %s: a valid environment variable name must consist of alphabetic characters, "
                "digits, '_', '-', or '.', and must not start with a digit. Regex used for validation is "
                "'%s'. %s%s is ignored.",
                name,
                syntax.ENV_NAME_PATTERN,
                ENV_PREFIX,
                name,
            )
    return kept


def secret_mounts(props: Mapping[str, str], prefix: str = SECRETS_PREFIX) -> dict[str, str]:
    """``spark.kubernetes.executor.secrets.<secret>=<path>`` (or the driver's ``prefix``): Secret name to
    mount path."""
    found = with_prefix(props, prefix)
    for name, path in found.items():
        full_key = prefix + name
        problem = syntax.dns_subdomain_problem(name)
        if problem is None:
            # Spark names the volume "<secret>-volume", which must be a DNS-1123 label.
            volume_problem = syntax.dns_label_problem(f"{name}-volume")
            if volume_problem is not None:
                problem = f"(its volume name {name}-volume) {volume_problem}"
        if problem is not None:
            raise _invalid(full_key, path, f"the Secret name {name!r} {problem}")
        if not path.strip():
            raise _invalid(full_key, path, "the mount path must not be empty")
    return found


def secret_env(props: Mapping[str, str], prefix: str = SECRET_KEY_REF_PREFIX) -> dict[str, str]:
    """``spark.kubernetes.executor.secretKeyRef.<ENV>=<secret>:<key>`` (or the driver's ``prefix``): env
    name to ``secret:key``."""
    found = with_prefix(props, prefix)
    for env, ref in found.items():
        full_key = prefix + env
        if not syntax.is_env_name(env):
            raise _invalid(
                full_key, ref, f"{env!r} is not an environment variable name ({syntax.ENV_NAME_PATTERN})"
            )
        parts = ref.split(":")
        if len(parts) != 2 or not all(parts):
            raise _invalid(
                full_key, ref, "SecretKeyRef must be in the form name:key (the Secret, a colon, its key)"
            )
        problem = syntax.dns_subdomain_problem(parts[0])
        if problem is not None:
            raise _invalid(full_key, ref, f"the Secret name {parts[0]!r} {problem}")
        problem = syntax.secret_key_problem(parts[1])
        if problem is not None:
            raise _invalid(full_key, ref, f"the Secret key {parts[1]!r} {problem}")
    return found


def custom_resources(props: Mapping[str, str]) -> tuple[ResourceRequest, ...]:
    """``spark.executor.resource.<name>.{amount,vendor,discoveryScript}``; amount 0 drops the resource."""
    by_name: dict[str, dict[str, str]] = {}
    for rest, value in with_prefix(props, RESOURCE_PREFIX).items():
        name, dot, option = rest.partition(".")
        if not dot:
            raise _invalid(
                RESOURCE_PREFIX + rest,
                value,
                f"use {RESOURCE_PREFIX}{rest}.amount (and .vendor, .discoveryScript) to request a resource",
            )
        if option not in _RESOURCE_OPTIONS:
            log.warning("Unknown executor resource setting %s%s is ignored", RESOURCE_PREFIX, rest)
            continue
        by_name.setdefault(name, {})[option] = value
    requests = []
    for name, options in sorted(by_name.items()):
        base = RESOURCE_PREFIX + name
        if "amount" not in options:
            raise ConfigError(
                f"You must specify an amount for {name}: set {base}.amount", key=f"{base}.amount"
            )
        amount = parse_int(options["amount"], key=f"{base}.amount")
        if amount < 0:
            raise _invalid(f"{base}.amount", options["amount"], "must be 0 (not requested) or more")
        if amount == 0:
            continue
        vendor = options.get("vendor", "").strip()
        if not vendor:
            raise ConfigError(
                f"{base}.vendor is required on Kubernetes: the resource is requested as <vendor>/{name}, "
                f"e.g. {base}.vendor=nvidia.com for nvidia.com/{name}",
                key=f"{base}.vendor",
            )
        problem = syntax.extended_resource_problem(f"{vendor}/{name}")
        if problem is not None:
            raise _invalid(f"{base}.vendor", vendor, f"the resource name {vendor}/{name} {problem}")
        requests.append(ResourceRequest(name, amount, vendor, options.get("discoveryScript", "")))
    return tuple(requests)


def offheap_mib(props: Mapping[str, str]) -> int:
    """Off-heap MiB added to the pod: ``spark.memory.offHeap.size`` when enabled, else 0 (as Spark)."""
    enabled_key = key("spark.memory.offHeap.enabled")
    size_key = key("spark.memory.offHeap.size")
    enabled = enabled_key.convert(props.get(enabled_key.name, enabled_key.default or "false"))
    raw_size = props.get(size_key.name, size_key.default or "0")
    size_bytes: int = size_key.convert(raw_size)
    if not enabled:
        return 0
    mib = size_bytes // SIZE_UNITS["m"]
    if mib <= 0:
        raise _invalid(
            size_key.name,
            raw_size,
            f"{size_key.name} must be > 0 when {enabled_key.name} == true (at least 1m)",
        )
    return mib
