"""A real control plane with the process kubelet as its node agent: what ``LocalCluster(control_plane=
"kubernetes")`` runs.

kube-scheduler binds pods to the kubelet's registered nodes; the kubelet (as a node user, through
:class:`~k8s_backend.local.kubelet.remote.RemoteKubeletApi`) runs them as local processes, or marks them
Running without processes. :meth:`KubeletControlPlane.start` returns once every node is Ready and
schedulable (the node lifecycle controller lifted the not-ready taint), so pods created right after are
bound at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from k8s_backend.kube.port import ApiError, Obj
from k8s_backend.local.control_plane.runner import ControlPlane, ControlPlaneError
from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.local.kubelet.container import HostEnvironment
from k8s_backend.local.kubelet.remote import NODES, RemoteKubeletApi

log = logging.getLogger(__name__)

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def schedulable(node: Obj) -> bool:
    """Ready, and without the taints of a node that is not (or no longer) ready."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = (node.get("spec") or {}).get("taints") or []
    return ready and not any(
        t.get("key") in (NOT_READY_TAINT, "node.kubernetes.io/unreachable") for t in taints
    )


class KubeletControlPlane:
    """A :class:`ControlPlane` plus a :class:`ProcessKubelet` serving ``nodes``; stop() stops both."""

    def __init__(
        self,
        *,
        work_dir: Path,
        nodes: Sequence[Node],
        run_processes: bool = True,
        images: ImagePolicy | None = None,
        stop_grace: float = 3.0,
        admin_token: str | None = None,
        ready_timeout: float = 180.0,
    ) -> None:
        self._work_dir = work_dir
        self._nodes = tuple(nodes)
        self._run_processes = run_processes
        self._images = images
        self._stop_grace = stop_grace
        self._ready_timeout = ready_timeout
        self.control_plane = ControlPlane(admin_token=admin_token)
        self._kubelet: ProcessKubelet | None = None
        self.timings: dict[str, float] = {}
        """Seconds from the start of ``start()``: the control plane's (``readyz``,
        ``default_service_account``) and ``nodes_ready`` (every node Ready and schedulable)."""

    @property
    def kubelet(self) -> ProcessKubelet:
        if self._kubelet is None:
            raise RuntimeError("the control plane's kubelet is not running")
        return self._kubelet

    def start(self) -> KubeletControlPlane:
        """Start the control plane, then the kubelet; wait until every node is schedulable."""
        started = time.monotonic()
        try:
            self.control_plane.start()
            api = RemoteKubeletApi(self.control_plane.api(kubeconfig=self.control_plane.kubelet_kubeconfig))
            # Pods run on this host's network: the kubernetes Service is the API server's own address.
            endpoint = urlsplit(self.control_plane.url)
            host = HostEnvironment.detect().with_api_service(
                endpoint.hostname or "127.0.0.1", endpoint.port or 443
            )
            self._kubelet = ProcessKubelet(
                api,
                host=host,
                work_dir=self._work_dir,
                nodes=self._nodes,
                run_processes=self._run_processes,
                images=self._images,
                stop_grace=self._stop_grace,
                schedule=False,
            )
            self._kubelet.start()
            self._wait_schedulable()
            self.timings = {**self.control_plane.timings, "nodes_ready": time.monotonic() - started}
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the kubelet (every process it started), then the control plane. Idempotent."""
        kubelet, self._kubelet = self._kubelet, None
        try:
            if kubelet is not None:
                kubelet.stop()
        finally:
            self.control_plane.stop()

    def _wait_schedulable(self) -> None:
        admin = self.control_plane.api()
        deadline = time.monotonic() + self._ready_timeout
        waiting = [node.name for node in self._nodes]
        while waiting:
            try:
                waiting = [name for name in waiting if not schedulable(admin.get(NODES, None, name))]
            except ApiError as error:
                log.debug("waiting for nodes: %s", error)
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"nodes {waiting} not schedulable within {self._ready_timeout:.0f} s (is the node "
                    "lifecycle controller of kube-controller-manager running?)"
                )
            time.sleep(0.1)
