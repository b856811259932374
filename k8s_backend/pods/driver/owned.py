"""What a driver step creates beside the driver pod, and the properties it sets for the driver.

Spark's steps return both (``getAdditionalKubernetesResources``, ``getAdditionalPodSystemProperties``).
Here the builder's ``additional_resources`` stays for PersistentVolumeClaims; a step that owns other
objects (a ConfigMap, a Secret, a NetworkPolicy) offers :class:`DriverOwnedResources`, which cluster
mode asks before it writes the driver's properties, and creates those objects after the pod, owned by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.names import is_dns1123_subdomain

POD_NAME_KEY = "spark.kubernetes.driver.pod.name"


@runtime_checkable
class DriverOwnedResources(Protocol):
    """A driver step that creates objects owned by the driver pod and may set driver properties."""

    def system_properties(self, ctx: DriverContext) -> Mapping[str, str]:
        """Properties the driver gets instead of the submitted ones (e.g. a file's path in the pod)."""
        ...

    def owned_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        """Objects to create once the driver pod exists (the owner reference is added then)."""
        ...


def resource_prefix(ctx: DriverContext) -> str:
    """Spark's ``resourceNamePrefix`` of the driver's objects: the driver pod's name without ``-driver``."""
    return ctx.pod_name.removesuffix("-driver")


def owned_name(ctx: DriverContext, suffix: str) -> str:
    """``<prefix>-<suffix>``; a :class:`ConfigError` when that is no valid object name."""
    name = f"{resource_prefix(ctx)}-{suffix}"
    if not is_dns1123_subdomain(name):
        raise ConfigError(
            f"{POD_NAME_KEY}={ctx.pod_name} is too long to name the driver's {suffix} object {name!r} "
            "(at most 253 characters): choose a shorter driver pod name or --name",
            key=POD_NAME_KEY,
            value=ctx.pod_name,
        )
    return name


def driver_extras(steps: Iterable[object], ctx: DriverContext) -> tuple[dict[str, str], list[Obj]]:
    """The properties and owned objects of the steps that have any, in the steps' order."""
    properties: dict[str, str] = {}
    resources: list[Obj] = []
    for step in steps:
        if isinstance(step, DriverOwnedResources):
            properties.update(step.system_properties(ctx))
            resources.extend(step.owned_resources(ctx))
    return properties, resources
