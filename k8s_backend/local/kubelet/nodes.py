"""Simulated nodes: allocatable CPU and memory, what pods request, and where a pod fits.

Pure bookkeeping with no threads or I/O: the kubelet's event loop owns one :class:`NodePool` and is the
only caller, so nothing here locks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from k8s_backend.conf.frozen import FrozenDict, freeze
from k8s_backend.kube.quantity import cpu_millis, format_cpu, format_memory, memory_bytes

Obj = dict[str, Any]


@attrs.frozen
class Resources:
    """An amount of CPU (millicores) and memory (bytes)."""

    cpu_millis: int = 0
    memory_bytes: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu_millis + other.cpu_millis, self.memory_bytes + other.memory_bytes)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu_millis - other.cpu_millis, self.memory_bytes - other.memory_bytes)

    def max(self, other: Resources) -> Resources:
        """The larger of each amount (init containers run one at a time)."""
        return Resources(max(self.cpu_millis, other.cpu_millis), max(self.memory_bytes, other.memory_bytes))

    def __str__(self) -> str:
        return f"cpu={format_cpu(self.cpu_millis)}, memory={format_memory(self.memory_bytes)}"


@attrs.frozen
class Node:
    """A simulated node; ``allocatable`` is what pods may request in total."""

    name: str
    allocatable: Resources
    labels: FrozenDict = attrs.field(converter=freeze, factory=FrozenDict)

    @classmethod
    def of(
        cls, name: str, *, cpu: str | int = "4", memory: str = "8Gi", labels: Mapping[str, str] | None = None
    ) -> Node:
        """A node from Kubernetes quantities, with the well-known labels a real node carries."""
        if not name:
            raise ValueError("Node name: '' is empty; give each simulated node a name such as 'node-1'")
        allocatable = Resources(
            cpu_millis(cpu, field=f"node {name} cpu"), memory_bytes(memory, field=f"node {name} memory")
        )
        if allocatable.cpu_millis <= 0 or allocatable.memory_bytes <= 0:
            raise ValueError(f"node {name}: allocatable cpu={cpu!r} memory={memory!r} must both be positive")
        all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
        return cls(name, allocatable, all_labels)


def container_requests(container: Obj) -> Resources:
    """What one container requests; a limit without a request counts as the request (API defaulting)."""
    resources = container.get("resources") or {}
    requested = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    cpu = requested.get("cpu", limits.get("cpu"))
    memory = requested.get("memory", limits.get("memory"))
    name = container.get("name", "?")
    return Resources(
        cpu_millis(cpu, field=f"container {name} cpu request") if cpu is not None else 0,
        memory_bytes(memory, field=f"container {name} memory request") if memory is not None else 0,
    )


def pod_requests(pod: Obj) -> Resources:
    """The scheduler's view of a pod: the sum over containers, or the largest init container if bigger."""
    spec = pod.get("spec") or {}
    total = Resources()
    for container in spec.get("containers") or []:
        total = total + container_requests(container)
    for init in spec.get("initContainers") or []:
        total = total.max(container_requests(init))
    return total


@attrs.frozen
class Placement:
    """Where a pod went: ``node`` is None when it fits nowhere, and ``message`` says why."""

    node: str | None
    message: str = ""


class NodePool:
    """Capacity accounting over a fixed set of nodes.

    A pod is placed on the feasible node with the most free capacity (the default scheduler's
    least-allocated spreading); ``release`` gives its requests back.
    """

    def __init__(self, nodes: Iterable[Node]) -> None:
        self._nodes: dict[str, Node] = {}
        for node in nodes:
            if node.name in self._nodes:
                raise ValueError(f"nodes: the name {node.name!r} is used twice; node names must be unique")
            self._nodes[node.name] = node
        if not self._nodes:
            raise ValueError("nodes: at least one simulated node is needed, e.g. [Node.of('node-1')]")
        self._used: dict[str, Resources] = dict.fromkeys(self._nodes, Resources())
        self._placed: dict[str, tuple[str, Resources]] = {}

    @property
    def nodes(self) -> Sequence[Node]:
        return tuple(self._nodes.values())

    def node(self, name: str) -> Node:
        """The node called ``name`` (KeyError if there is none)."""
        return self._nodes[name]

    def free(self, node: str) -> Resources:
        """What is still allocatable on a node."""
        return self._nodes[node].allocatable - self._used[node]

    def node_of(self, key: str) -> str | None:
        placed = self._placed.get(key)
        return placed[0] if placed else None

    def place(self, key: str, pod: Obj) -> Placement:
        """Reserve room for a pod (idempotent per key); a :class:`Placement` without node if none fits."""
        if key in self._placed:
            return Placement(self._placed[key][0])
        wanted = pod_requests(pod)
        selector: Mapping[str, str] = (pod.get("spec") or {}).get("nodeSelector") or {}
        required_node = (pod.get("spec") or {}).get("nodeName") or ""
        insufficient_cpu = insufficient_memory = mismatched = 0
        best: str | None = None
        best_score = -1.0
        for node in self._nodes.values():
            if (required_node and node.name != required_node) or any(
                node.labels.get(k) != v for k, v in selector.items()
            ):
                mismatched += 1
                continue
            free = self.free(node.name)
            short_cpu = wanted.cpu_millis > free.cpu_millis
            short_memory = wanted.memory_bytes > free.memory_bytes
            insufficient_cpu += short_cpu
            insufficient_memory += short_memory
            if short_cpu or short_memory:
                continue
            score = (
                free.cpu_millis / node.allocatable.cpu_millis
                + free.memory_bytes / node.allocatable.memory_bytes
            )
            if score > best_score:
                best, best_score = node.name, score
        if best is None:
            return Placement(
                None, self._unschedulable_message(insufficient_cpu, insufficient_memory, mismatched)
            )
        self._used[best] = self._used[best] + wanted
        self._placed[key] = (best, wanted)
        return Placement(best)

    def release(self, key: str) -> bool:
        """Give a pod's requests back; False if the pod held nothing."""
        placed = self._placed.pop(key, None)
        if placed is None:
            return False
        node, wanted = placed
        self._used[node] = self._used[node] - wanted
        return True

    def _unschedulable_message(self, cpu: int, memory: int, mismatched: int) -> str:
        # Same shape as kube-scheduler's FailedScheduling message, so tools that grep it still work.
        reasons = []
        if cpu:
            reasons.append(f"{cpu} Insufficient cpu")
        if memory:
            reasons.append(f"{memory} Insufficient memory")
        if mismatched:
            reasons.append(f"{mismatched} node(s) didn't match Pod's node affinity/selector")
        total = len(self._nodes)
        return f"0/{total} nodes are available: {', '.join(reasons)}."


def default_nodes(run_processes: bool) -> list[Node]:
    """One node sized for this machine when processes really run; a huge one for allocation-only tests."""
    if not run_processes:
        return [Node.of("node-1", cpu="100000", memory="1000Ti")]
    cpus = max(4, 2 * (os.cpu_count() or 2))
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory_mi = max(4096, memory // (1024 * 1024))
    except (ValueError, OSError, AttributeError):
        memory_mi = 8192
    return [Node.of("node-1", cpu=str(cpus), memory=f"{memory_mi}Mi")]
