"""Whether the node tier can run here (one line why not).

Nothing is built here: a cold build of the node takes tens of minutes, far beyond a test's timeout. The
README's test command builds the control plane, and ``python -m k8s_backend.local.node build`` the node's
binaries and images, before the tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from k8s_backend.local.control_plane import ControlPlaneBuilder
from k8s_backend.local.node import NodeBuilder
from k8s_backend.local.node.build import missing_host_tools
from k8s_backend.local.node.images import ImageBuilder

BUILD = "python -m k8s_backend.local.node build"


def node_missing() -> str | None:
    """Why the node tier cannot run here (one line), or None."""
    if os.geteuid() != 0:
        return "a real node needs root (containerd, runc, cgroups, a bridge)"
    if ControlPlaneBuilder().cached() is None:
        return "the real control plane is not built: python -m k8s_backend.local.control_plane build"
    tools = missing_host_tools()
    if tools:
        return f"the node needs Debian's {', '.join(tools)} on this machine: {BUILD} installs them"
    missing = [b.key for b in NodeBuilder().missing()]
    if missing:
        return f"the node's binaries are not built ({', '.join(missing)}): {BUILD}"
    layers = ImageBuilder().missing()
    if layers:
        return f"the node's images are not built ({', '.join(layers)} layers): {BUILD}"
    return None


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Re-check ``condition`` every 0.2 s until it holds (True) or ``timeout`` seconds passed (False): a
    real kubelet, and a process on this machine, signal nothing to wait on."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
