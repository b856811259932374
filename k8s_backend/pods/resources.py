"""Executor container sizing: memory, CPU and custom resources (Spark's getResourcesForClusterManager)."""

from __future__ import annotations

import attrs

from k8s_backend.conf.model import DEFAULT_PROFILE_ID, ExecutorPodConf, ResourceProfile, ResourceRequest
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj


@attrs.frozen
class ExecutorResources:
    """What one executor container asks Kubernetes for."""

    heap_mib: int
    overhead_mib: int
    total_mib: int
    cores: int
    cpu_request: str
    cpu_limit: str | None
    custom_limits: tuple[tuple[str, str], ...] = ()

    @property
    def memory(self) -> str:
        """The memory request and limit, e.g. ``1408Mi``."""
        return f"{self.total_mib}Mi"


def memory_overhead_mib(profile: ResourceProfile, pod_conf: ExecutorPodConf) -> int:
    """Explicit overhead, else ``max(factor x heap, minimum overhead)`` (the product truncated)."""
    if profile.memory_overhead_mib is not None:
        return profile.memory_overhead_mib
    return max(int(pod_conf.memory_overhead_factor * profile.memory_mib), pod_conf.min_memory_overhead_mib)


def custom_resource_limits(profile: ResourceProfile) -> tuple[tuple[str, str], ...]:
    """``<vendor>/<name>`` limits for custom resources such as GPUs; a vendor is required."""
    return tuple(
        (_kubernetes_resource_name(request), str(request.amount)) for request in profile.custom_resources
    )


def _kubernetes_resource_name(request: ResourceRequest) -> str:
    if not request.vendor:
        key = f"spark.executor.resource.{request.name}.vendor"
        raise ConfigError(
            f"Resource: {request.name} was requested, but vendor was not specified: set {key} "
            "(e.g. nvidia.com for nvidia.com/gpu), the device plugin's resource domain on Kubernetes",
            key=key,
            value=None,
        )
    return f"{request.vendor}/{request.name}"


def executor_resources(profile: ResourceProfile, pod_conf: ExecutorPodConf) -> ExecutorResources:
    """Size the executor container of ``profile``.

    ``spark.kubernetes.executor.{request,limit}.cores`` apply to the default profile only: other
    profiles carry their own cores and have no way to override them.
    """
    overhead = memory_overhead_mib(profile, pod_conf)
    total = profile.memory_mib + overhead + profile.offheap_mib + profile.pyspark_memory_mib
    is_default = profile.id == DEFAULT_PROFILE_ID
    cpu_request = pod_conf.request_cores if is_default and pod_conf.request_cores else str(profile.cores)
    cpu_limit = pod_conf.limit_cores if is_default else None
    return ExecutorResources(
        heap_mib=profile.memory_mib,
        overhead_mib=overhead,
        total_mib=total,
        cores=profile.cores,
        cpu_request=cpu_request,
        cpu_limit=cpu_limit or None,
        custom_limits=custom_resource_limits(profile),
    )


def apply_resources(container: Obj, resources: ExecutorResources, *, clear_existing: bool) -> None:
    """Set requests and limits on the container, keeping other template entries unless cleared."""
    current = container.get("resources")
    if clear_existing or not isinstance(current, dict):
        current = {}
    requests = dict(current.get("requests") or {})
    limits = dict(current.get("limits") or {})
    requests["memory"] = resources.memory
    limits["memory"] = resources.memory
    requests["cpu"] = resources.cpu_request
    limits.update(resources.custom_limits)
    if resources.cpu_limit is not None:
        limits["cpu"] = resources.cpu_limit
    container["resources"] = {**current, "requests": requests, "limits": limits}
