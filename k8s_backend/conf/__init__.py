"""Configuration: Spark properties in, typed frozen objects out."""

from k8s_backend.conf.model import (
    AllocationConf,
    ApiClientConf,
    DriverConf,
    ExecutorPodConf,
    KubernetesConf,
    LifecycleConf,
    ResourceProfile,
    ResourceRequest,
    ScalingConf,
    SnapshotsConf,
    VolumeSpec,
)
from k8s_backend.errors import ConfigError

__all__ = [
    "AllocationConf",
    "ApiClientConf",
    "ConfigError",
    "DriverConf",
    "ExecutorPodConf",
    "KubernetesConf",
    "LifecycleConf",
    "ResourceProfile",
    "ResourceRequest",
    "ScalingConf",
    "SnapshotsConf",
    "VolumeSpec",
]
