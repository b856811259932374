"""What the allocator asks the pod builder for, and what it gets back."""

from __future__ import annotations

import attrs

from k8s_backend.conf.model import DEFAULT_PROFILE_ID, ResourceProfile
from k8s_backend.kube.port import Obj


@attrs.frozen
class ExecutorPodRequest:
    """One executor pod to build.

    ``driver_url`` is ``spark://CoarseGrainedScheduler@host:port``. ``driver_pod`` (when the driver runs
    in a pod) becomes the controller owner reference. ``config_map_name`` is the executor ConfigMap to
    mount at ``/opt/spark/conf``; None when ``spark.kubernetes.executor.disableConfigMap`` is set.
    ``auth_secret_name`` is the Secret holding the RPC auth secret (see :mod:`k8s_backend.pods.auth_secret`);
    without it, a needed secret is written into the pod's environment as Spark does.
    """

    executor_id: int | str  # str only for UNRESOLVED_EXECUTOR_ID, the StatefulSet/Deployment template
    app_id: str
    driver_url: str
    pod_name_prefix: str
    resource_profile: ResourceProfile
    driver_pod: Obj | None = None
    config_map_name: str | None = None
    auth_secret_name: str | None = None

    @property
    def is_default_profile(self) -> bool:
        return self.resource_profile.id == DEFAULT_PROFILE_ID


@attrs.frozen
class ExecutorPodSpec:
    """A built executor pod: the pod (Spark container attached) and the on-demand claims to create."""

    pod: Obj
    pvcs: tuple[Obj, ...] = ()
