"""How big the cluster-mode driver is and where it listens, as usage errors: the rules are
:mod:`k8s_backend.pods.driver.sizing`'s, where the driver pod's basic step reads them."""

from __future__ import annotations

from collections.abc import Mapping

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.errors import ConfigError
from k8s_backend.pods.driver import sizing
from k8s_backend.pods.driver.sizing import NON_JVM_OVERHEAD_FACTOR, DriverPorts, DriverResources

__all__ = ["NON_JVM_OVERHEAD_FACTOR", "DriverPorts", "DriverResources", "driver_ports", "driver_resources"]


def driver_resources(properties: Mapping[str, str]) -> DriverResources:
    """:func:`k8s_backend.pods.driver.sizing.driver_resources`, a bad value a usage error naming the key."""
    try:
        return sizing.driver_resources(properties)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def driver_ports(properties: Mapping[str, str]) -> DriverPorts:
    """:func:`k8s_backend.pods.driver.sizing.driver_ports`, a bad value a usage error naming the key."""
    try:
        return sizing.driver_ports(properties)
    except ConfigError as error:
        raise UsageError(str(error)) from None
