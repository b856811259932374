"""Avoid failing nodes: after ``threshold`` executor failures on one node within ``window`` seconds that
are not the application's own, new executor pods get a node anti-affinity against that node until the
window expires. Spark's ``excludeOnFailure`` works per task inside Spark; this works on placement, where
Kubernetes decides.

A failure is the node's, not the application's, when the kubelet evicted the pod, the container could not
start, or the container was killed by a signal other than the kernel's OOM kill (exit 128+n, e.g. 137
without ``OOMKilled``, 143); an executor that exits by itself (1, Spark's 50-59, ...) failed on its own.
:class:`NodeFailures` is immutable: the pure decisions take one and return the next.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from k8s_backend.allocation.creator import PodSpecBuilder
from k8s_backend.common import Clock
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle import explain
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

log = logging.getLogger(__name__)

_NODE_REASONS = frozenset({"Evicted", "ContainerCannotRun", "StartError", "CreateContainerError", "NodeLost"})


def node_failure(state: ExecutorPodState, container_name: str) -> str | None:
    """Why this ended pod's failure is its node's (None: not a failure, or the application's own)."""
    if state.phase is not PodPhase.FAILED:
        return None
    status = state.pod.get("status") or {}
    if status.get("reason") in _NODE_REASONS:
        return f"pod {status.get('reason')}"
    reason = explain.termination_reason(state.pod, container_name)
    if reason in _NODE_REASONS:
        return f"container {reason}"
    code = explain.exit_code_of(state.pod, container_name)
    if code > 128 and reason != "OOMKilled":
        return f"container killed by signal {code - 128} (exit {code})"
    return None


def node_of(pod: Obj) -> str | None:
    name = (pod.get("spec") or {}).get("nodeName")
    return name if isinstance(name, str) and name else None


@attrs.frozen
class AvoidedNode:
    node: str
    failures: int
    until: float
    last_reason: str


def _frozen(
    value: Mapping[str, tuple[tuple[float, str], ...]],
) -> Mapping[str, tuple[tuple[float, str], ...]]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class NodeFailures:
    """Per node, the (time, why) of failures within the window; ``counted``: executors already counted."""

    failures: Mapping[str, tuple[tuple[float, str], ...]] = attrs.field(factory=dict, converter=_frozen)
    counted: frozenset[int] = frozenset()

    def record(
        self, states: Iterable[ExecutorPodState], now: float, *, container_name: str, window: float
    ) -> NodeFailures:
        """The failures after these updates, those older than ``window`` forgotten."""
        failures = {n: tuple(f for f in fs if now - f[0] < window) for n, fs in self.failures.items()}
        counted = set(self.counted)
        for state in states:
            if state.executor_id in counted:
                continue
            why, node = node_failure(state, container_name), node_of(state.pod)
            if why is None or node is None:
                continue
            counted.add(state.executor_id)
            failures[node] = (*failures.get(node, ()), (now, why))
        return NodeFailures({n: fs for n, fs in failures.items() if fs}, frozenset(counted))

    def avoided(self, now: float, *, threshold: int, window: float) -> tuple[AvoidedNode, ...]:
        """The nodes with at least ``threshold`` failures within the window, sorted by name."""
        out = []
        for node, fs in sorted(self.failures.items()):
            recent = [f for f in fs if now - f[0] < window]
            if threshold > 0 and len(recent) >= threshold:
                # Avoided until the oldest failure that keeps it over the threshold leaves the window.
                until = recent[-threshold][0] + window
                out.append(AvoidedNode(node, len(recent), until, recent[-1][1]))
        return tuple(out)


def anti_affinity(pod: Obj, nodes: Iterable[str]) -> Obj:
    """The pod with a required node affinity ``metadata.name NotIn nodes`` (a field, so whatever the
    nodes' labels) added to each of its existing terms (terms are ORed: each must exclude the nodes), or
    as the only term."""
    names = sorted(set(nodes))
    if not names:
        return pod
    expression = {"key": "metadata.name", "operator": "NotIn", "values": names}
    spec = pod.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        term["matchFields"] = [*(term.get("matchFields") or []), expression]
    required["nodeSelectorTerms"] = terms
    return pod


class NodeAvoider:
    """Keeps the :class:`NodeFailures` (the allocator's thread observes each batch before its round) and
    logs once per node when it starts to be avoided."""

    def __init__(self, clock: Clock, *, threshold: int, window: float, container_name: str) -> None:
        self._clock = clock
        self.threshold = threshold
        self.window = window
        self._container = container_name
        self._lock = threading.Lock()
        self._failures = NodeFailures()
        self._announced: frozenset[str] = frozenset()

    def observe_batch(self, batch: SnapshotBatch) -> None:
        now = self._clock.now()
        with self._lock:
            self._failures = self._failures.record(
                batch.updates, now, container_name=self._container, window=self.window
            )
        avoided = self.avoided()
        for node in avoided:
            if node.node not in self._announced:
                log.warning(
                    "Node %s: %d executor failures in %gs that are not the application's own (last: %s); new "
                    "executors avoid it (node anti-affinity) until the window expires.",
                    node.node,
                    node.failures,
                    self.window,
                    node.last_reason,
                )
        self._announced = frozenset(n.node for n in avoided)

    def avoided(self) -> tuple[AvoidedNode, ...]:
        with self._lock:
            failures = self._failures
        return failures.avoided(self._clock.now(), threshold=self.threshold, window=self.window)

    def status(self) -> list[dict[str, Any]]:
        return [
            {"node": n.node, "failures": n.failures, "until": n.until, "why": n.last_reason}
            for n in self.avoided()
        ]


class NodeAvoidingPodBuilder:
    """Builds with a node anti-affinity against the avoided nodes (everything else is the inner's)."""

    def __init__(self, inner: PodSpecBuilder, avoider: NodeAvoider) -> None:
        self._inner = inner
        self._avoider = avoider

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
        spec = self._inner.build(request)
        nodes = [n.node for n in self._avoider.avoided()]
        if nodes:
            anti_affinity(spec.pod, nodes)
        return spec
