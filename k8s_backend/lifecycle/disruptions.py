"""Pure decisions on the cluster's notices that an executor is about to be taken away.

Kubernetes announces most executor losses that are not crashes: an evicted or preempted pod gets the
``DisruptionTarget`` condition; ``kubectl drain`` cordons the node first (``spec.unschedulable``, shown as
the ``node.kubernetes.io/unschedulable`` taint); cluster autoscalers taint the nodes they are about to
remove (``ToBeDeletedByClusterAutoscaler``, ``karpenter.sh/disrupted``). :meth:`DisruptionDecider.decide`
maps the executor pods, the nodes they run on and what was noticed before to the executors to
decommission now; it does no I/O, so every rule is unit-testable with plain data.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import attrs

from k8s_backend.kube.port import Obj
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

DISRUPTION_TARGET = "DisruptionTarget"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# What kubectl drain, the cluster autoscaler and Karpenter (v1 and its v0.3x name) put on a node they empty.
DEFAULT_DISRUPTION_TAINTS = (
    UNSCHEDULABLE_TAINT,
    "ToBeDeletedByClusterAutoscaler",
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
)
_LIVE = frozenset({PodPhase.PENDING, PodPhase.RUNNING, PodPhase.UNKNOWN})


@attrs.frozen
class NodeView:
    """What the disruption decisions read of a node: whether it is cordoned and its taints' keys."""

    name: str
    unschedulable: bool = False
    taints: frozenset[str] = frozenset()

    @classmethod
    def of(cls, node: Obj) -> NodeView:
        """The view of a Node object (as the API returns it); malformed parts read as absent."""
        metadata = node.get("metadata") or {}
        spec = node.get("spec") or {}
        taints = spec.get("taints") or []
        keys = frozenset(
            str(t["key"]) for t in taints if isinstance(t, dict) and isinstance(t.get("key"), str)
        )
        return cls(str(metadata.get("name", "")), bool(spec.get("unschedulable", False)), keys)


@attrs.frozen
class DisruptionNotice:
    """Decommission this executor now: the cluster announced it is taking the pod (``reason`` says how)."""

    executor_id: int
    pod_name: str
    node_name: str | None
    reason: str


@attrs.frozen
class DisruptionDecision:
    """The executors to decommission in this round, and the executors noticed so far (pass it back)."""

    notices: tuple[DisruptionNotice, ...]
    noticed: frozenset[int]


@attrs.frozen(kw_only=True)
class DisruptionDecider:
    """The settings, frozen. ``taints``: node taint keys that announce the node's removal (the
    ``node.kubernetes.io/unschedulable`` key also matches a cordoned node's ``spec.unschedulable``)."""

    taints: frozenset[str] = frozenset(DEFAULT_DISRUPTION_TAINTS)

    @property
    def reads_nodes(self) -> bool:
        """Whether any node signal is configured (otherwise nodes are never read: no RBAC needed)."""
        return bool(self.taints)

    def decide(
        self,
        pods: Mapping[int, ExecutorPodState],
        nodes: Mapping[str, NodeView] | None,
        noticed: frozenset[int] = frozenset(),
        *,
        only: Collection[int] | None = None,
    ) -> DisruptionDecision:
        """Notices for the live executor pods with a disruption signal not noticed before.

        ``nodes``: the nodes by name, or None when they cannot be read (only pod conditions count then).
        Each executor is noticed at most once while its pod exists; ``noticed`` forgets pods that are gone.
        ``only``: the executors whose pods changed since a decision over the same ``nodes`` (None: every
        pod); any other pod would decide now as it did then, so it is not looked at again.
        """
        kept = frozenset(i for i in noticed if i in pods)
        notices: list[DisruptionNotice] = []
        candidates = sorted(pods) if only is None else sorted(i for i in set(only) if i in pods)
        for executor_id in candidates:
            if executor_id in kept:
                continue
            state = pods[executor_id]
            if state.is_inactive or not (state.phase in _LIVE or state.phase is PodPhase.TERMINATING):
                continue  # ended already: the lifecycle reports it; nothing to migrate ahead of it
            node_name = _node_name(state.pod)
            # The eviction API sets the condition and deletes the pod in one request: an evicted pod is
            # seen terminating, with its grace period still to run, the time its blocks have to migrate.
            reason = _pod_signal(state.pod)
            ending = state.phase is PodPhase.TERMINATING or state.is_being_deleted
            if reason is None and not ending and nodes is not None and node_name is not None:
                node = nodes.get(node_name)
                reason = None if node is None else self._node_signal(node)
            if reason is not None:
                notices.append(DisruptionNotice(executor_id, state.name, node_name, reason))
        return DisruptionDecision(tuple(notices), kept | {n.executor_id for n in notices})

    def _node_signal(self, node: NodeView) -> str | None:
        if node.unschedulable and UNSCHEDULABLE_TAINT in self.taints:
            return f"node {node.name} is cordoned (spec.unschedulable, as kubectl drain does first)"
        for key in sorted(node.taints & self.taints):
            return f"node {node.name} carries the taint {key}"
        return None


def parse_taints(values: Iterable[str]) -> frozenset[str]:
    """The taint keys of a configured list (blank entries dropped)."""
    return frozenset(v.strip() for v in values if v.strip())


def _node_name(pod: Obj) -> str | None:
    spec: Any = pod.get("spec") or {}
    name = spec.get("nodeName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else None


def _pod_signal(pod: Obj) -> str | None:
    status: Any = pod.get("status") or {}
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(condition, dict)
            and condition.get("type") == DISRUPTION_TARGET
            and condition.get("status") == "True"
        ):
            why = condition.get("reason") or "no reason given"
            message = condition.get("message")
            detail = f"{why}: {message}" if message else str(why)
            return f"pod condition {DISRUPTION_TARGET} ({detail})"
    return None
