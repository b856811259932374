"""How big the cluster-mode driver is and where it listens: Spark's driver sizing rules.

Memory is ``spark.driver.memory`` plus an overhead (explicit, or a factor of the memory with a
minimum; 0.4 for Python drivers, as Spark), CPU is ``spark.driver.cores`` or the Kubernetes
request/limit keys, and the RPC, block manager and UI ports come from Spark's port keys. Every bad
value is a :class:`ConfigError` naming the key, before anything is created.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs

from k8s_backend.conf import units
from k8s_backend.errors import ConfigError

NON_JVM_OVERHEAD_FACTOR = 0.4  # Spark's default for Python drivers
_N = TypeVar("_N", int, float)


@attrs.frozen
class DriverResources:
    """What the driver container asks for (Spark's driver sizing)."""

    memory_mib: int
    overhead_mib: int
    cpu_request: str
    cpu_limit: str | None

    @property
    def memory(self) -> str:
        return f"{self.memory_mib + self.overhead_mib}Mi"


@attrs.frozen
class DriverPorts:
    """The driver's RPC, block manager and UI ports."""

    driver: int = 7078
    block_manager: int = 7079
    ui: int = 4040


def _parsed(properties: Mapping[str, str], key: str, parse: Callable[[str], _N]) -> _N | None:
    """The value of ``key`` if set; a bad value is a :class:`ConfigError` naming the key."""
    raw = properties.get(key)
    if raw is None:
        return None
    return parse(raw)


def _positive_size(properties: Mapping[str, str], key: str) -> int | None:
    value = _parsed(properties, key, lambda raw: units.parse_size(raw, key=key, unit="m"))
    if value is not None and value <= 0:
        raise ConfigError(
            f"{key}={properties[key]} is invalid: must be a positive size such as 1g",
            key=key,
            value=properties[key],
        )
    return value


def _positive_number(properties: Mapping[str, str], key: str) -> float | None:
    value = _parsed(properties, key, lambda raw: units.parse_float(raw, key=key))
    if value is not None and value <= 0:
        raise ConfigError(
            f"{key}={properties[key]} is invalid: must be a number greater than 0",
            key=key,
            value=properties[key],
        )
    return value


def driver_resources(properties: Mapping[str, str]) -> DriverResources:
    """Memory (``spark.driver.memory`` + overhead) and CPU of the driver container; bad values are
    a :class:`ConfigError` naming the key."""
    memory = _positive_size(properties, "spark.driver.memory") or 1024
    minimum = _positive_size(properties, "spark.driver.minMemoryOverhead") or 384
    explicit = _positive_size(properties, "spark.driver.memoryOverhead")
    factor = _positive_number(properties, "spark.driver.memoryOverheadFactor") or _positive_number(
        properties, "spark.kubernetes.memoryOverheadFactor"
    )
    if explicit is not None:
        overhead = explicit
    else:
        overhead = max(int((factor or NON_JVM_OVERHEAD_FACTOR) * memory), minimum)
    key = "spark.driver.cores"
    cores = _parsed(properties, key, lambda raw: units.parse_int(raw, key=key))
    if cores is not None and cores <= 0:
        raise ConfigError(
            f"{key}={properties[key]} is invalid: must be a positive whole number",
            key=key,
            value=properties[key],
        )
    request = properties.get("spark.kubernetes.driver.request.cores") or str(cores or 1)
    limit = properties.get("spark.kubernetes.driver.limit.cores") or None
    return DriverResources(memory, overhead, request, limit)


def driver_ports(properties: Mapping[str, str]) -> DriverPorts:
    """The driver's RPC, block manager and UI ports (0, "any port" to Spark, takes the default)."""

    def port(key: str, default: int) -> int:
        value = _parsed(properties, key, lambda raw: units.parse_int(raw, key=key))
        if not value:
            return default
        if not 0 < value < 65536:
            raise ConfigError(
                f"{key}={value} is invalid: must be a port number between 1 and 65535", key=key, value=value
            )
        return value

    return DriverPorts(
        port("spark.driver.port", 7078),
        port("spark.driver.blockManager.port", port("spark.blockManager.port", 7079)),
        port("spark.ui.port", 4040),
    )
