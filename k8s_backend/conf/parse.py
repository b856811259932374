"""Spark properties in, a checked :class:`KubernetesConf` out.

Simple keys go through the keys table generically (kind, default, check, fallbacks, field). Fields that
depend on several keys (``custom=True`` rows) are computed here or in :mod:`~k8s_backend.conf.parse_pod`
and :mod:`~k8s_backend.conf.parse_volumes`. Every bad value raises :class:`ConfigError` naming the key,
the value and what is accepted; unknown ``spark.kubernetes.*`` keys only log a warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any

import attrs

from k8s_backend.conf import keys, parse_pod
from k8s_backend.conf.keys_driver import AUTH_PREFIXES, AUTH_SUFFIXES
from k8s_backend.conf.model import (
    AllocationConf,
    ApiClientConf,
    DriverConf,
    ExecutorPodConf,
    GangConf,
    KubernetesConf,
    LifecycleConf,
    ResourceProfile,
    RollConf,
    ScalingConf,
    SnapshotsConf,
)
from k8s_backend.conf.parse_roll import check_roll
from k8s_backend.conf.parse_volumes import EXECUTOR_ID_PLACEHOLDER as PVC_EXECUTOR_ID_PLACEHOLDER
from k8s_backend.conf.parse_volumes import parse_volumes
from k8s_backend.conf.refused import check_refused
from k8s_backend.conf.spec import Use
from k8s_backend.conf.units import cpu_millis
from k8s_backend.errors import ConfigError
from k8s_backend.kube import masters

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
SPARK_VERSION_PLACEHOLDER = "{{SPARK_VERSION}}"


def parse_spark_conf(conf: object) -> KubernetesConf:
    """Read and check Spark properties: a ``Mapping[str, str]`` or anything with ``getAll()`` (SparkConf)."""
    props = read_properties(conf)
    warn_unknown_keys(props)
    check_refused(props)
    reader = Reader(props)
    values = reader.simple_fields()
    app_id = values.get("app_id")
    values.update(
        {
            "executor.image": _executor_image(reader),
            "executor.extra_java_options": _java_options(reader),
            "executor.labels": parse_pod.pod_labels(props, app_id),
            "executor.annotations": parse_pod.pod_annotations(props),
            "executor.node_selector": parse_pod.node_selector(props),
            "executor.environment": parse_pod.environment(props),
            "executor.secret_mounts": parse_pod.secret_mounts(props),
            "executor.secret_env": parse_pod.secret_env(props),
            "executor.volumes": parse_volumes(props),
            "executor.default_profile.custom_resources": parse_pod.custom_resources(props),
            "executor.default_profile.offheap_mib": parse_pod.offheap_mib(props),
            "api.master": _api_master(reader),
            **_credentials(props),
            **_scaling(reader, values),
        }
    )
    _check_pending_pods(reader, values)
    _check_task_cpus(reader, values)
    _check_cpu_limit(reader, values)
    check_roll(props, values)
    values.update(_allocator(reader, values))
    return _assemble(values, props)


def read_properties(conf: object) -> dict[str, str]:
    """The properties of a mapping or of a SparkConf-like object (duck-typed on ``getAll()``)."""
    if isinstance(conf, Mapping):
        items = list(conf.items())
    elif callable(getattr(conf, "getAll", None)):
        items = list(conf.getAll())  # type: ignore[attr-defined]
    else:
        raise TypeError(
            f"Spark properties must be a Mapping[str, str] or a pyspark.SparkConf, not {type(conf).__name__}"
        )
    props: dict[str, str] = {}
    for name, value in items:
        if not isinstance(name, str):
            raise ConfigError(f"Spark property names are strings; got {name!r}", key=str(name), value=value)
        props[name] = _as_text(name, value)
    return props


def _as_text(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # Python's True would print as "True"; Spark writes "true"
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise ConfigError(
        f"{name}={value!r} is not a property value: Spark properties are strings (or numbers and booleans)",
        key=name,
        value=value,
    )


def unknown_key_warnings(props: Mapping[str, str]) -> list[str]:
    """One warning per ``spark.kubernetes.*`` key neither k8s_backend nor Spark knows, naming the nearest
    known key (``k8s-backend submit`` prints them before anything starts)."""
    warnings = []
    for name in keys.unknown_keys(props):
        near = keys.suggest(name)
        hint = f"; did you mean {near}?" if near else ""
        warnings.append(f"Unknown Spark property {name} is ignored by k8s_backend{hint}")
    return warnings


_TOLD: set[str] = set()  # unknown keys already warned about in this process
_TOLD_LOCK = threading.Lock()


def mark_unknown_keys_told(props: Mapping[str, str]) -> None:
    """Record that the user was told about these properties' unknown keys (``k8s-backend submit`` printed
    them): later parses in this process stay quiet about them."""
    with _TOLD_LOCK:
        _TOLD.update(keys.unknown_keys(props))


def forget_told_unknown_keys() -> None:
    """Warn again about every unknown key (tests start each from a clean slate)."""
    with _TOLD_LOCK:
        _TOLD.clear()


def warn_unknown_keys(props: Mapping[str, str]) -> None:
    """Log :func:`unknown_key_warnings`, once per key and process: the same properties are parsed again
    (``with_properties``, the driver's side of a submission) and one warning is enough."""
    names = keys.unknown_keys(props)
    with _TOLD_LOCK:
        untold = [n for n in names if n not in _TOLD]
        _TOLD.update(untold)
    if untold:
        for warning in unknown_key_warnings({n: props[n] for n in untold}):
            log.warning("%s", warning)


@attrs.frozen
class Reader:
    """Typed access to raw properties through the keys table."""

    props: Mapping[str, str]

    def is_set(self, name: str) -> bool:
        return name in self.props

    def value(self, name: str) -> Any:
        """The key's value: its own, else the first fallback set, else the first default in that order.

        (A Spark FallbackConfigEntry without a default of its own takes its fallback's default.)
        """
        chain = (name, *keys.key(name).fallbacks)
        for candidate in chain:
            if candidate in self.props:
                return keys.key(candidate).convert(self.props[candidate])
        for candidate in chain:
            default = keys.key(candidate).default_value()
            if default is not None:
                return default
        return None

    def simple_fields(self) -> dict[str, Any]:
        """Check every set key we read, and fill the fields of the table's non-custom rows."""
        for name, raw in self.props.items():
            row = keys.KEYS_BY_NAME.get(name)
            if row is not None and row.use is Use.READ:
                row.convert(raw)
        values: dict[str, Any] = {}
        for row in keys.KEYS:
            if row.field is None or row.custom or row.is_prefix or row.use is not Use.READ:
                continue
            value = self.value(row.name)
            if value is not None:
                values[row.field] = value
        return values


def _executor_image(reader: Reader) -> str | None:
    image: str | None = reader.value("spark.kubernetes.executor.container.image")
    if image is not None and SPARK_VERSION_PLACEHOLDER in image:
        try:
            version = metadata.version("pyspark")
        except metadata.PackageNotFoundError as error:
            raise ConfigError(
                f"The executor image {image} uses {SPARK_VERSION_PLACEHOLDER} but pyspark is not installed "
                "to tell the version; write the version in spark.kubernetes.executor.container.image",
                key="spark.kubernetes.executor.container.image",
                value=image,
            ) from error
        image = image.replace(SPARK_VERSION_PLACEHOLDER, version)
    return image


def _java_options(reader: Reader) -> str:
    """``defaultJavaOptions`` then ``extraJavaOptions``, joined by a space, as Spark's prepended
    ConfigEntry does (either alone when the other is unset)."""
    parts = (
        reader.value("spark.executor.defaultJavaOptions"),
        reader.value("spark.executor.extraJavaOptions"),
    )
    return " ".join(part for part in parts if part)


def _api_master(reader: Reader) -> str:
    """The API server URL: "" for kubeconfig or in-cluster, "local" for the embedded local cluster."""
    driver_master = reader.props.get("spark.kubernetes.driver.master")
    if driver_master is not None:
        key = "spark.kubernetes.driver.master"  # Spark's: an API server URL, a scheme is optional
        return masters.parse_master(driver_master, key=key, scheme_required=False).api_url
    master = reader.props.get("spark.master", "")
    if masters.is_kubernetes(master):
        return masters.parse_master(master).api_url
    return ""  # another kind of master (local[*], spark://...): no API server named


def _credentials(props: Mapping[str, str]) -> dict[str, Any]:
    """All credentials from the first family with any key set (Spark reads one family per mode)."""
    for prefix in AUTH_PREFIXES:
        found = {
            field: keys.key(prefix + suffix).convert(props[prefix + suffix])
            for suffix, (field, _) in AUTH_SUFFIXES.items()
            if prefix + suffix in props
        }
        if not found:
            continue
        if "oauth_token" in found and "oauth_token_file" in found:
            raise ConfigError(
                f"Cannot specify OAuth token through both a file {prefix}oauthTokenFile and a value "
                f"{prefix}oauthToken; keep one of them",
                key=f"{prefix}oauthToken",
            )
        ignored = [p + s for p in AUTH_PREFIXES if p != prefix for s in AUTH_SUFFIXES if p + s in props]
        if ignored:
            log.info("API credentials come from %s*; ignoring %s", prefix, ", ".join(ignored))
        return {f"api.{field}": value for field, value in found.items()}
    return {}


def _scaling(reader: Reader, values: Mapping[str, Any]) -> dict[str, Any]:
    """Initial executors and the failure limit, with Spark's dynamic-allocation rules."""
    dynamic: bool = values["scaling.dynamic_allocation"]
    instances: int = values["scaling.executor_instances"]
    instances_set = reader.is_set("spark.executor.instances")
    low: int = values["scaling.min_executors"]
    high: int = values["scaling.max_executors"]
    initial: int = reader.value("spark.dynamicAllocation.initialExecutors")
    min_key, max_key = "spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.maxExecutors"
    initial_key = "spark.dynamicAllocation.initialExecutors"
    if dynamic:
        if low < 0 or high < 0:
            raise ConfigError(
                f"{min_key} and {max_key} must be positive! (got {low} and {high})", key=min_key
            )
        if high == 0:
            raise ConfigError(f"{max_key} cannot be 0! Set it to at least 1.", key=max_key, value=high)
        if low > high:
            raise ConfigError(
                f"{min_key} ({low}) must be less than or equal to {max_key} ({high})!", key=min_key, value=low
            )
        if reader.is_set(initial_key) and initial < low:
            log.warning(
                "%s less than %s is invalid, ignoring its setting, please update your configs.",
                initial_key,
                min_key,
            )
        if reader.is_set(initial_key) and initial > high:
            raise ConfigError(
                f"{initial_key} ({initial}) must be less than or equal to {max_key} ({high})",
                key=initial_key,
                value=initial,
            )
        if instances_set and instances < low:
            log.warning(
                "spark.executor.instances less than %s is invalid, ignoring its setting, please "
                "update your configs.",
                min_key,
            )
        initial = max(low, initial, instances if instances_set else 0)
        if initial > high:
            log.warning(
                "Starting with %d executors (spark.executor.instances) though %s is %d, as Spark does",
                initial,
                max_key,
                high,
            )
    failures: int | None = reader.value("spark.executor.maxNumFailures")
    if failures is None:
        counted = high if dynamic else (instances if instances_set else 0)
        failures = max(3, INT_MAX if counted > INT_MAX // 2 else 2 * counted)
    return {"scaling.initial_executors": initial, "lifecycle.max_executor_failures": failures}


def _check_pending_pods(reader: Reader, values: Mapping[str, Any]) -> None:
    per_rp: int = values["allocation.max_pending_pods_per_rp"]
    overall: int = values["allocation.max_pending_pods"]
    if per_rp != INT_MAX and per_rp > overall:
        name = "spark.kubernetes.allocation.maxPendingPodsPerRp"
        raise ConfigError(
            f"{name}={reader.props.get(name)} is invalid: Maximum pending pods per resource profile ID "
            f"({per_rp}) must be less than or equal to maximum pending pods ({overall}, "
            "spark.kubernetes.allocation.maxPendingPods)",
            key=name,
            value=per_rp,
        )


def _allocator(reader: Reader, values: Mapping[str, Any]) -> dict[str, Any]:
    """The deployment allocator's deletion cost, checked against the allocator (as Spark)."""
    cost_key = "spark.kubernetes.executor.podDeletionCost"
    allocator_key = "spark.kubernetes.allocation.pods.allocator"
    allocator: str = values["allocation.allocator"]
    cost: int | None = reader.value(cost_key)
    if cost is not None and allocator != "deployment":
        raise ConfigError(
            f"{cost_key}={cost} acts only with {allocator_key}=deployment (it is {allocator}): remove the "
            f"key or set {allocator_key}=deployment",
            key=cost_key,
            value=cost,
        )
    # As Spark: without a cost, the ReplicaSet controller would pick the executors to remove by itself.
    if allocator == "deployment" and values["scaling.dynamic_allocation"] and cost is None:
        raise ConfigError(
            f"{allocator_key}=deployment with dynamic allocation needs {cost_key}: set it to the deletion "
            "cost of the pods Spark removes (lower than the others' 0, e.g. -100)",
            key=cost_key,
            value=None,
        )
    _check_direct_only(reader, values)
    _check_owner_claims(allocator, values.get("executor.volumes") or ())
    return {"allocation.pod_deletion_cost": cost}


def _check_owner_claims(allocator: str, volumes: Iterable[Any]) -> None:
    """Claims the controller-made pods cannot have: none with a Deployment (as Spark); with a StatefulSet,
    none named after the executor id (the one template has no id: use OnDemand claim templates)."""
    prefix = "spark.kubernetes.executor.volumes.persistentVolumeClaim"
    for volume in volumes:
        if volume.type != "persistentVolumeClaim":
            continue
        key = f"{prefix}.{volume.name}.options.claimName"
        if allocator == "deployment":
            raise ConfigError(
                "PersistentVolumeClaims are not supported with the deployment allocator (as in Spark): "
                f"remove the {prefix}.{volume.name}.* keys or set "
                "spark.kubernetes.allocation.pods.allocator=statefulset",
                key=key,
                value=volume.claim_name,
            )
        if allocator == "statefulset" and PVC_EXECUTOR_ID_PLACEHOLDER in volume.claim_name:
            raise ConfigError(
                f"{key}={volume.claim_name} names the claim after the executor id, which the statefulset "
                "allocator's pod template does not have: set it to OnDemand (a volume claim template, one "
                "claim per pod) or use the direct allocator",
                key=key,
                value=volume.claim_name,
            )


_DIRECT_ONLY = (
    ("lifecycle.quota_aware", "spark.kubernetes.allocation.quotaAware", lambda v: bool(v)),
    ("lifecycle.node_failure_threshold", "spark.kubernetes.executor.nodeFailures.threshold", lambda v: v > 0),
    ("lifecycle.oom_overhead_factor", "spark.kubernetes.executor.oom.overheadFactor", lambda v: v > 1.0),
)


def _check_direct_only(reader: Reader, values: Mapping[str, Any]) -> None:
    """Refuse what only the direct allocator does (each pod is built by the backend) with the others,
    when set (quotaAware is on by default, and is then simply not for them)."""
    allocator: str = values["allocation.allocator"]
    if allocator == "direct":
        return
    for field, key, acts in _DIRECT_ONLY:
        value = values.get(field)
        if reader.is_set(key) and value is not None and acts(value):
            raise ConfigError(
                f"{key}={value} acts only with the direct allocator (the backend builds each executor pod), "
                f"not with spark.kubernetes.allocation.pods.allocator={allocator}, whose controller makes "
                "the pods from one template: remove the key or use the direct allocator",
                key=key,
                value=value,
            )


def _check_task_cpus(reader: Reader, values: Mapping[str, Any]) -> None:
    cores: int = values["executor.default_profile.cores"]
    task_cpus: float = values["executor.default_profile.task_cpus"]
    if cores < task_cpus:
        raise ConfigError(
            f"spark.task.cpus={reader.props.get('spark.task.cpus')} is invalid: The number of cores per "
            f"executor (={cores}, spark.executor.cores) has to be >= the number of cpus per task = "
            f"{task_cpus:g}.",
            key="spark.task.cpus",
            value=task_cpus,
        )


def _check_cpu_limit(reader: Reader, values: Mapping[str, Any]) -> None:
    """The API server refuses a container whose CPU request is above its CPU limit."""
    limit: str | None = values.get("executor.limit_cores")
    if limit is None:
        return
    request: str | None = values.get("executor.request_cores")
    request_key = "spark.kubernetes.executor.request.cores"
    if request is None:
        request, request_key = str(values["executor.default_profile.cores"]), "spark.executor.cores"
    if cpu_millis(request) > cpu_millis(limit):
        name = "spark.kubernetes.executor.limit.cores"
        raise ConfigError(
            f"{name}={reader.props.get(name)} is invalid: the CPU limit is below the CPU request "
            f"({request_key}={reader.props.get(request_key, request)}), which Kubernetes refuses; raise the "
            f"limit or lower the request",
            key=name,
            value=reader.props.get(name),
        )


def _group(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The fields directly under ``prefix``: ``"executor."`` gives ``image``, not ``default_profile.x``."""
    found = {}
    for path, value in values.items():
        if path.startswith(prefix) and "." not in path[len(prefix) :]:
            found[path[len(prefix) :]] = value
    return found


def _assemble(values: Mapping[str, Any], props: Mapping[str, str]) -> KubernetesConf:
    profile = ResourceProfile(**_group(values, "executor.default_profile."))
    return KubernetesConf(
        **_group(values, ""),
        api=ApiClientConf(**_group(values, "api.")),
        allocation=AllocationConf(**_group(values, "allocation.")),
        snapshots=SnapshotsConf(**_group(values, "snapshots.")),
        lifecycle=LifecycleConf(**_group(values, "lifecycle.")),
        roll=RollConf(**_group(values, "roll.")),
        scaling=ScalingConf(**_group(values, "scaling.")),
        driver=DriverConf(**_group(values, "driver.")),
        executor=ExecutorPodConf(default_profile=profile, **_group(values, "executor.")),
        gang=GangConf(**_group(values, "gang.")),
        spark_properties=props,
    )
