"""The scaling decisions of the ``statefulset`` and ``deployment`` allocators, as pure functions.

Spark's StatefulSetPodsAllocator/DeploymentPodsAllocator turn each profile's target into the replicas
of the profile's owner object: create it the first time, scale it afterwards. Executor ids come later,
one per pod that still carries ``EXECID``; for a Deployment, the pods Spark removes get the lower
``controller.kubernetes.io/pod-deletion-cost`` so that the ReplicaSet controller removes those first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs

from k8s_backend.kube.labels import SPARK_EXECUTOR_ID_LABEL
from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.states import UNRESOLVED_EXECUTOR_ID, executor_id_of


@attrs.frozen
class CreateOwner:
    """Create the profile's owner object with ``replicas`` pods."""

    rp_id: int
    replicas: int


@attrs.frozen
class ScaleOwner:
    """Set the replicas of the profile's existing owner object."""

    rp_id: int
    replicas: int


OwnerAction = CreateOwner | ScaleOwner


def plan_owners(targets: Mapping[int, int], replicas: Mapping[int, int]) -> tuple[OwnerAction, ...]:
    """The actions that bring each profile's owner to its target.

    ``replicas`` holds the replicas last set on each owner that exists; a profile without one gets a
    :class:`CreateOwner` (even for a target of 0, as Spark, so that later scaling only scales).
    """
    actions: list[OwnerAction] = []
    for rp_id in sorted(targets):
        target = targets[rp_id]
        if target < 0:
            raise ValueError(f"negative target {target} for resource profile {rp_id}")
        if rp_id not in replicas:
            actions.append(CreateOwner(rp_id, target))
        elif replicas[rp_id] != target:
            actions.append(ScaleOwner(rp_id, target))
    return tuple(actions)


def unresolved_pods(pods: Sequence[Obj]) -> tuple[str, ...]:
    """The names of the live pods that still wait for an executor id, oldest first (then by name)."""
    waiting = [p for p in pods if _waits_for_id(p) and not p["metadata"].get("deletionTimestamp")]
    waiting.sort(key=lambda p: (str(p["metadata"].get("creationTimestamp") or ""), p["metadata"]["name"]))
    return tuple(p["metadata"]["name"] for p in waiting)


def _waits_for_id(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(SPARK_EXECUTOR_ID_LABEL) == UNRESOLVED_EXECUTOR_ID)


def assign_ids(names: Sequence[str], last_id: int) -> tuple[tuple[str, int], ...]:
    """Pod name -> the next executor ids after ``last_id``, in order (Spark's ``incrementAndGet``)."""
    return tuple((name, last_id + i) for i, name in enumerate(names, start=1))


def highest_id(pods: Sequence[Obj]) -> int:
    """The highest executor id already given to one of ``pods`` (0 for none): ids never repeat."""
    return max((i for i in map(executor_id_of, pods) if i is not None), default=0)


def pods_to_mark(pods: Sequence[Obj], executor_ids: Collection[int]) -> tuple[str, ...]:
    """The names of the live pods of ``executor_ids``: the ones to make cheapest to remove."""
    wanted = set(executor_ids)
    return tuple(
        sorted(
            p["metadata"]["name"]
            for p in pods
            if executor_id_of(p) in wanted and not p["metadata"].get("deletionTimestamp")
        )
    )


def observed(owner: Obj) -> bool:
    """Whether a controller has seen the owner object (it sets ``status.observedGeneration``)."""
    return bool((owner.get("status") or {}).get("observedGeneration"))


def is_scale_down(action: OwnerAction, replicas: Mapping[int, int]) -> bool:
    """Whether ``action`` lowers an existing owner's replicas."""
    return isinstance(action, ScaleOwner) and action.replicas < replicas.get(action.rp_id, 0)
