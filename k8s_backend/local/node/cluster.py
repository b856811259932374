"""A real control plane with a real node: what ``LocalCluster(control_plane="kubernetes",
runtime="containers")`` runs.

kube-scheduler binds pods to the node; its kubelet runs them through containerd and runc, in containers
of the images built here (:mod:`k8s_backend.local.node.images`), on a bridge whose gateway address is
how pods reach a driver on this machine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from k8s_backend.local.control_plane.runner import ControlPlane
from k8s_backend.local.node.images import ImageBuilder
from k8s_backend.local.node.runtime import RealNode

log = logging.getLogger(__name__)


class ContainerControlPlane:
    """A :class:`ControlPlane` plus a :class:`RealNode` running the sandbox and Spark images."""

    def __init__(
        self,
        *,
        admin_token: str | None = None,
        ready_timeout: float = 180.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._progress = progress or (lambda line: log.info("%s", line))
        self.control_plane = ControlPlane(admin_token=admin_token, progress=self._progress)
        self._ready_timeout = ready_timeout
        self._node: RealNode | None = None
        self.spark_image = ""
        self.timings: dict[str, float] = {}
        """Seconds from the start of ``start()``: the control plane's, then ``images`` (built or found in
        the cache) and ``node_ready``."""

    @property
    def node(self) -> RealNode:
        if self._node is None:
            raise RuntimeError("the real node is not running")
        return self._node

    def start(self) -> ContainerControlPlane:
        """Build (or find) the images, start the control plane, then the node; wait until it is Ready."""
        started = time.monotonic()
        try:
            builder = ImageBuilder(progress=self._progress)
            pause, spark = builder.pause(), builder.spark()
            self.spark_image = spark.name
            images_built = time.monotonic() - started
            self.control_plane.start()
            self._node = RealNode(
                self.control_plane, images=[spark], pause=pause, ready_timeout=self._ready_timeout,
                progress=self._progress,
            )  # fmt: skip
            self._node.start()
            self.timings = {
                "images": images_built,
                **{f"control_plane_{k}": v for k, v in self.control_plane.timings.items()},
                **{f"node_{k}": v for k, v in self._node.timings.items()},
                "node_ready": time.monotonic() - started,
            }
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the node (every container), then the control plane. Idempotent."""
        node, self._node = self._node, None
        try:
            if node is not None:
                node.stop()
        finally:
            self.control_plane.stop()
