"""Which PersistentVolumeClaims an executor pod can reuse, and when to wait for one (pure decisions).

With ``spark.kubernetes.driver.ownPersistentVolumeClaim`` and ``reusePersistentVolumeClaim`` the
driver owns the on-demand claims, so they outlive their executors; a new executor takes over an unused
one of the same storage class and size instead of creating another (SPARK-35416). With
``waitToReusePersistentVolumeClaim`` no more pods are created once every allowed claim exists and none
is free (SPARK-41410).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import attrs

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import parse_timestamp

log = logging.getLogger(__name__)


@attrs.frozen
class PvcReusePolicy:
    """The PVC settings the allocator acts on."""

    own_pvc: bool = True
    reuse_pvc: bool = True
    wait_to_reuse: bool = False
    max_pvcs: int = 2
    batch_delay: float = 1.0

    @classmethod
    def from_conf(cls, conf: KubernetesConf) -> PvcReusePolicy:
        return cls(
            own_pvc=conf.driver.own_pvc,
            reuse_pvc=conf.driver.reuse_pvc,
            wait_to_reuse=conf.driver.wait_to_reuse_pvc,
            # Dynamic allocation: maxExecutors; otherwise spark.executor.instances.
            max_pvcs=conf.scaling.max_target,
            batch_delay=conf.allocation.batch_delay,
        )

    @property
    def allocate_on_pvc(self) -> bool:
        """PVC-oriented allocation (Spark's podAllocOnPVC)."""
        return self.own_pvc and self.reuse_pvc and self.wait_to_reuse

    def lists_pvcs(self, driver_pod_known: bool) -> bool:
        """Whether reusable claims are looked up: only driver-owned claims survive their executor."""
        return self.own_pvc and self.reuse_pvc and driver_pod_known

    def exhausted(self, pvc_counter: int) -> bool:
        """Every claim PVC-oriented allocation allows has been created."""
        return self.allocate_on_pvc and self.max_pvcs <= pvc_counter

    def must_wait(self, reusable_left: int, pvc_counter: int) -> bool:
        """No claim to reuse and no new one allowed: stop creating pods until one is released."""
        return reusable_left == 0 and self.exhausted(pvc_counter)


def claim_names_in_use(batch: SnapshotBatch) -> frozenset[str]:
    """Claim names mounted by any pod observed in this batch, whatever its state.

    Taken before any deletion of this round: a false "in use" only delays a reuse, a false "free"
    would attach one claim to two pods.
    """
    names: set[str] = set()
    states = list(batch.snapshot.pods.values()) + list(batch.updates)
    for state in states:
        names.update(_claim_names(state.pod))
    return frozenset(names)


def _claim_names(pod: Obj) -> Iterable[str]:
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        claim = (volume or {}).get("persistentVolumeClaim") or {}
        name = claim.get("claimName")
        if name:
            yield str(name)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def reusable_pvcs(pvcs: Sequence[Obj], in_use: Collection[str], now: float, batch_delay: float) -> list[Obj]:
    """The listed claims no observed pod mounts and that are older than one batch delay.

    A claim created within the last batch delay may belong to a pod we just created but have not
    observed yet (SPARK-41388); a claim without a readable creationTimestamp is treated the same way.
    """
    reusable = []
    for pvc in pvcs:
        if _name(pvc) in in_use:
            continue
        created = parse_timestamp((pvc.get("metadata") or {}).get("creationTimestamp"))
        if created is None or now - created <= batch_delay:
            continue
        reusable.append(pvc)
    return reusable


def _storage_class(pvc: Obj) -> Any:
    return (pvc.get("spec") or {}).get("storageClassName")


def _storage_size(pvc: Obj) -> Any:
    resources = (pvc.get("spec") or {}).get("resources") or {}
    return (resources.get("requests") or {}).get("storage")


def _matches(candidate: Obj, wanted: Obj) -> bool:
    same_class: bool = _storage_class(candidate) == _storage_class(wanted)
    return same_class and bool(_storage_size(candidate) == _storage_size(wanted))


@attrs.frozen
class ClaimReuse:
    """The pod with reused claims swapped in, and the claims that still have to be created."""

    pod: Obj
    pvcs_to_create: tuple[Obj, ...]
    reused: tuple[str, ...]


def reuse_claims(pod: Obj, pvcs: Sequence[Obj], reusable: list[Obj]) -> ClaimReuse:
    """Point the pod's volumes at reusable claims of the same storage class and size.

    Consumes the claims it reuses from ``reusable`` (one claim, one pod); ``pod`` itself is not
    modified.
    """
    if not pvcs or not reusable:
        return ClaimReuse(pod, tuple(pvcs), ())
    pod = copy.deepcopy(pod)
    volumes = (pod.get("spec") or {}).get("volumes") or []
    to_create: list[Obj] = []
    reused: list[str] = []
    for pvc in pvcs:
        index = next((i for i, c in enumerate(reusable) if _matches(c, pvc)), None)
        volume = next(
            (
                v
                for v in volumes
                if ((v or {}).get("persistentVolumeClaim") or {}).get("claimName") == _name(pvc)
            ),
            None,
        )
        if index is None or volume is None:
            to_create.append(pvc)
            continue
        claim = reusable.pop(index)
        volume["persistentVolumeClaim"]["claimName"] = _name(claim)
        reused.append(_name(claim))
        log.info("Reuse PersistentVolumeClaim %s", _name(claim))
    return ClaimReuse(pod, tuple(to_create), tuple(reused))
