"""Node registration and heartbeats, as a kubelet does them on a real API server.

For each simulated node, :class:`NodeRegistration` creates a ``Node`` object (labels, capacity and
allocatable, addresses, node info, and the conditions ``Ready=True`` and no pressure), then keeps it
alive the way a kubelet does since Kubernetes 1.17: it renews the node's ``Lease`` in the
``kube-node-lease`` namespace every ``lease_interval`` seconds and re-posts the node status (the
conditions' heartbeat times) every ``status_interval`` seconds. The node lifecycle controller reads
both: it lifts the ``node.kubernetes.io/not-ready`` taint that admission puts on a new node once the
node is Ready, and marks nodes whose lease stops being renewed unreachable.

Heartbeats run on a thread of their own, so a slow API never delays the pods' event loop.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial

from k8s_backend.kube.port import ApiError, ConflictError, KubernetesApi, NotFoundError, Obj
from k8s_backend.kube.quantity import format_cpu, format_memory
from k8s_backend.local.kubelet.nodes import Node
from k8s_backend.local.kubelet.podstate import timestamp
from k8s_backend.local.kubelet.remote import NODE_LEASE_NAMESPACE, NODE_LEASES, NODES

log = logging.getLogger(__name__)

KUBELET_VERSION = "v1.37.2"
LEASE_DURATION_SECONDS = 40  # the kubelet's default nodeLeaseDurationSeconds
MANAGED_BY = "k8s-backend.io/process-kubelet"  # annotation on the Node objects this kubelet owns


def microtime(seconds: float) -> str:
    """RFC 3339 with microseconds in UTC (a Lease's ``renewTime`` is a MicroTime)."""
    whole = int(seconds)
    micros = int((seconds - whole) * 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros:06d}Z"


def node_conditions(now: float, since: float, *, ready: bool = True) -> list[Obj]:
    """The conditions of a healthy node: Ready, and no memory, disk or PID pressure (``ready=False``: the
    kubelet stopped)."""
    beat, since_text = timestamp(now), timestamp(since)

    def condition(kind: str, status: str, reason: str, message: str) -> Obj:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": beat,
            "lastTransitionTime": since_text,
        }

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        if ready
        else {
            **condition("Ready", "False", "KubeletStopped", "the process kubelet stopped"),
            "lastTransitionTime": beat,
        },
    ]


def node_object(
    node: Node, *, address: str, max_pods: int, now: float, since: float, ready: bool = True
) -> Obj:
    """The Node a kubelet registers for ``node``, with its status."""
    resources = {
        "cpu": format_cpu(node.allocatable.cpu_millis),
        "memory": format_memory(node.allocatable.memory_bytes),
        "pods": str(max_pods),
    }
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {"kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux", **node.labels},
            "annotations": {MANAGED_BY: "true"},
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": node_conditions(now, since, ready=ready),
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": node.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "osImage": platform.platform(),
                "kernelVersion": platform.release(),
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "k8s-backend-process://1",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


class NodeRegistration:
    """Registers ``nodes`` and heartbeats them until :meth:`stop`.

    On stop the nodes report ``Ready=False`` (reason ``KubeletStopped``) and their Leases are removed,
    so the node lifecycle controller taints them at once and kube-scheduler binds nothing more to them
    (a real kubelet leaves that to the lease expiring, 40 s later). ``unregister_on_stop`` also deletes
    the Node objects, which needs more than a node's permissions (``system:node`` may not delete nodes).
    """

    def __init__(
        self,
        api: KubernetesApi,
        nodes: Sequence[Node],
        *,
        address: str = "127.0.0.1",
        max_pods: int = 110,
        lease_interval: float = LEASE_DURATION_SECONDS / 4,
        status_interval: float = 60.0,
        unregister_on_stop: bool = False,
    ) -> None:
        self._api = api
        self._nodes = tuple(nodes)
        self._address = address
        self._max_pods = max_pods
        self._lease_interval = lease_interval
        self._status_interval = status_interval
        self._unregister = unregister_on_stop
        self._since = time.time()
        self._uids: dict[str, str] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-heartbeat", daemon=True)
        self.lease_renewals = 0
        """How many lease renewals succeeded (for tests and diagnostics)."""

    def start(self) -> None:
        """Register every node and its lease now (errors propagate), then heartbeat in the background."""
        for node in self._nodes:
            self._register(node)
            self._renew_lease(node)
        self._thread.start()

    def stop(self) -> None:
        """Stop heartbeating, report the nodes not ready and remove their Leases (and the nodes if
        ``unregister_on_stop``)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(10.0)
        for node in self._nodes:
            steps: list[tuple[str, Callable[[], object]]] = [
                ("reporting node %s not ready", partial(self._post_status, node, ready=False)),
                (
                    "removing the lease of node %s",
                    partial(self._api.delete, NODE_LEASES, NODE_LEASE_NAMESPACE, node.name),
                ),
            ]
            if self._unregister:
                steps.append(("removing node %s", partial(self._api.delete, NODES, None, node.name)))
            for what, step in steps:
                try:
                    step()
                except NotFoundError:
                    pass
                except ApiError as error:
                    log.warning(what + " failed: %s", node.name, error)

    # -- registration ------------------------------------------------------------------------------

    def _node_object(self, node: Node, *, ready: bool = True) -> Obj:
        return node_object(
            node, address=self._address, max_pods=self._max_pods, now=time.time(), since=self._since,
            ready=ready,
        )  # fmt: skip

    def _register(self, node: Node) -> None:
        wanted = self._node_object(node)
        try:
            created = self._api.create(NODES, None, wanted)
        except ConflictError:
            # Registered before (a restarted kubelet): take it over with this kubelet's labels and status.
            meta = wanted["metadata"]
            patch = {"metadata": {"labels": meta["labels"], "annotations": meta["annotations"]}}
            created = self._api.patch(NODES, None, node.name, patch)
            self._post_status(node)
        self._uids[node.name] = str((created.get("metadata") or {}).get("uid", ""))
        log.info("registered node %s", node.name)

    def _post_status(self, node: Node, *, ready: bool = True) -> None:
        status = self._node_object(node, ready=ready)["status"]
        self._api.patch(NODES, None, f"{node.name}/status", {"status": status})

    def _renew_lease(self, node: Node) -> None:
        spec = {
            "holderIdentity": node.name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": microtime(time.time()),
        }
        try:
            self._api.patch(NODE_LEASES, NODE_LEASE_NAMESPACE, node.name, {"spec": spec})
        except NotFoundError:
            owner = {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": self._uids.get(node.name)}
            lease: Obj = {
                "apiVersion": NODE_LEASES.api_version,
                "kind": "Lease",
                "metadata": {
                    "name": node.name,
                    "namespace": NODE_LEASE_NAMESPACE,
                    **({"ownerReferences": [owner]} if owner["uid"] else {}),
                },
                "spec": spec,
            }
            self._api.create(NODE_LEASES, NODE_LEASE_NAMESPACE, lease)
        self.lease_renewals += 1

    # -- heartbeats --------------------------------------------------------------------------------

    def _run(self) -> None:
        next_status = time.monotonic() + self._status_interval
        while not self._stopping.wait(self._lease_interval):
            post_status = time.monotonic() >= next_status
            if post_status:
                next_status = time.monotonic() + self._status_interval
            for node in self._nodes:
                try:
                    self._renew_lease(node)
                    if post_status:
                        self._post_status(node)
                except NotFoundError:
                    self._reregister(node)
                except ApiError as error:
                    log.warning("heartbeat of node %s failed: %s", node.name, error)
                except Exception:  # the heartbeat must outlive any surprise from the API
                    log.exception("heartbeat of node %s failed", node.name)

    def _reregister(self, node: Node) -> None:
        try:
            self._register(node)  # the Node was deleted under us: a kubelet registers it again
        except ApiError as error:
            log.warning("registering node %s again failed: %s", node.name, error)
