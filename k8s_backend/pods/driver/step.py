"""The driver step protocol: the executor's idiom (:class:`~k8s_backend.pods.step.SparkPod` in, a new
one out), with what a driver step knows about the application."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from k8s_backend.kube.port import Obj
from k8s_backend.pods.step import SparkPod


@attrs.frozen
class DriverContext:
    """The driver being built: its application's properties and names."""

    properties: Mapping[str, str]
    app_id: str
    pod_name: str
    namespace: str


@runtime_checkable
class DriverFeatureStep(Protocol):
    """One concern of the driver pod (Spark's KubernetesFeatureConfigStep on the driver side)."""

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        """Return the pod with this step's settings applied (the input is not mutated)."""
        ...

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        """Objects created after the driver pod and owned by it (PersistentVolumeClaims only)."""
        ...
