"""The objects that own executor pods under the ``statefulset`` and ``deployment`` allocators.

Counterpart of the creation halves of Spark's StatefulSetPodsAllocator and DeploymentPodsAllocator:
one StatefulSet ``spark-s-<appId>-<rpId>`` (``podManagementPolicy=Parallel``) or Deployment
``spark-d-<appId>-<rpId>`` per resource profile, whose pod template is an executor pod built with the
executor id ``EXECID``. The controllers of kube-controller-manager create the pods; each executor gets
its id later (Spark's GenerateExecID). Pure functions: objects in, objects out.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from typing import Any

from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import (
    EXECUTOR_ROLE,
    SPARK_APP_ID_LABEL,
    SPARK_EXECUTOR_ID_LABEL,
    SPARK_RESOURCE_PROFILE_ID_LABEL,
    SPARK_ROLE_LABEL,
)
from k8s_backend.kube.port import Obj, Resource
from k8s_backend.pods.request import ExecutorPodSpec
from k8s_backend.snapshots.states import UNRESOLVED_EXECUTOR_ID

STATEFUL_SETS = Resource("StatefulSet", "statefulsets", group="apps")
DEPLOYMENTS = Resource("Deployment", "deployments", group="apps")
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
ALLOCATOR_KEY = "spark.kubernetes.allocation.pods.allocator"


class OwnerKind(enum.Enum):
    """Which controller owns the executor pods."""

    STATEFUL_SET = "statefulset"
    DEPLOYMENT = "deployment"

    @property
    def resource(self) -> Resource:
        return STATEFUL_SETS if self is OwnerKind.STATEFUL_SET else DEPLOYMENTS

    def object_name(self, app_id: str, rp_id: int) -> str:
        """The owner object's name, as Spark's: ``spark-s-<appId>-<rpId>`` or ``spark-d-<appId>-<rpId>``."""
        letter = "s" if self is OwnerKind.STATEFUL_SET else "d"
        return f"spark-{letter}-{app_id}-{rp_id}"


def selector_labels(app_id: str, rp_id: int) -> dict[str, str]:
    """The labels that select one profile's executor pods (Spark's selector)."""
    return {
        SPARK_APP_ID_LABEL: app_id,
        SPARK_ROLE_LABEL: EXECUTOR_ROLE,
        SPARK_RESOURCE_PROFILE_ID_LABEL: str(rp_id),
    }


def owner_object(
    kind: OwnerKind,
    built: ExecutorPodSpec,
    *,
    app_id: str,
    rp_id: int,
    replicas: int,
    driver_owner: Obj | None,
) -> Obj:
    """The StatefulSet or Deployment for one profile, from the executor pod built with id EXECID.

    ``driver_owner`` is the owner reference to the driver pod (the garbage collector then deletes the
    object, and so its pods, with the driver). Raises :class:`ConfigError` for what the kind cannot
    carry (Deployments have no volume claim templates).
    """
    template, claims = pod_template(kind, built)
    metadata: Obj = {"name": kind.object_name(app_id, rp_id), "labels": selector_labels(app_id, rp_id)}
    if driver_owner is not None:
        metadata["ownerReferences"] = [driver_owner]
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": selector_labels(app_id, rp_id)},
        "template": template,
    }
    if kind is OwnerKind.STATEFUL_SET:
        spec["podManagementPolicy"] = "Parallel"
        # Required by the API; no such Service is needed (executors are reached by their pod IPs).
        spec["serviceName"] = kind.object_name(app_id, rp_id)
        if claims:
            spec["volumeClaimTemplates"] = claims
    return {"apiVersion": "apps/v1", "kind": kind.resource.kind, "metadata": metadata, "spec": spec}


def pod_template(kind: OwnerKind, built: ExecutorPodSpec) -> tuple[Obj, list[Obj]]:
    """The pod template (and, for a StatefulSet, its volume claim templates) from a built pod."""
    pod = copy.deepcopy(built.pod)
    metadata: dict[str, Any] = pod.get("metadata") or {}
    spec: dict[str, Any] = pod.get("spec") or {}
    labels = metadata.setdefault("labels", {})
    if labels.get(SPARK_EXECUTOR_ID_LABEL) != UNRESOLVED_EXECUTOR_ID:
        raise ValueError(f"the template pod must be built with executor id {UNRESOLVED_EXECUTOR_ID}")
    # The controller names the pods, owns them and gives each its hostname.
    for key in ("name", "ownerReferences", "namespace"):
        metadata.pop(key, None)
    spec.pop("hostname", None)
    spec["restartPolicy"] = "Always"  # the only policy either controller accepts
    claims: list[Obj] = []
    if kind is OwnerKind.DEPLOYMENT:
        _refuse_claims(spec, built.pvcs)
        annotations = metadata.setdefault("annotations", {})
        annotations.setdefault(DELETION_COST_ANNOTATION, "0")  # as Spark: the ones to remove get less
    else:
        claims = _claim_templates(spec, built.pvcs)
    return {"metadata": metadata, "spec": spec}, claims


def _refuse_claims(spec: Obj, pvcs: tuple[Obj, ...]) -> None:
    uses_claims = any("persistentVolumeClaim" in (v or {}) for v in spec.get("volumes") or [])
    if pvcs or uses_claims:
        raise ConfigError(
            "PersistentVolumeClaims are not supported with the deployment allocator (as in Spark): remove "
            "the spark.kubernetes.executor.volumes.persistentVolumeClaim.* keys, or set "
            f"{ALLOCATOR_KEY}=statefulset",
            key=ALLOCATOR_KEY,
            value=OwnerKind.DEPLOYMENT.value,
        )


def _claim_templates(spec: Obj, pvcs: tuple[Obj, ...]) -> list[Obj]:
    """Move the on-demand claims into volume claim templates named after their volumes (as Spark)."""
    by_claim: Mapping[str, Obj] = {str(c["metadata"]["name"]): c for c in pvcs}
    templates: list[Obj] = []
    kept: list[Obj] = []
    for volume in spec.get("volumes") or []:
        claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        claim = by_claim.get(str(claim_name)) if claim_name is not None else None
        if claim is None:
            kept.append(volume)
            continue
        templates.append({"metadata": {"name": volume["name"]}, "spec": copy.deepcopy(claim["spec"])})
    if templates:
        spec["volumes"] = kept
    return templates


def scale_patch(replicas: int) -> Obj:
    """The merge patch that scales an owner object (what the scale subresource changes)."""
    return {"spec": {"replicas": replicas}}


def deletion_cost_patch(cost: int) -> Obj:
    """The merge patch that marks a Deployment's pod as the cheapest (or dearest) to remove."""
    return {"metadata": {"annotations": {DELETION_COST_ANNOTATION: str(cost)}}}


def executor_label_patch(executor_id: int) -> Obj:
    """The merge patch Spark's driver makes on GenerateExecID: the pod's id label, whatever it was (an
    executor restarted in its pod asks again and gets a new id)."""
    return {"metadata": {"labels": {SPARK_EXECUTOR_ID_LABEL: str(executor_id)}}}


def executor_id_patch(executor_id: int) -> list[Obj]:
    """The JSON patch that gives an EXECID pod its id, only if no one gave it one meanwhile."""
    path = "/metadata/labels/" + SPARK_EXECUTOR_ID_LABEL
    return [
        {"op": "test", "path": path, "value": UNRESOLVED_EXECUTOR_ID},
        {"op": "replace", "path": path, "value": str(executor_id)},
    ]
