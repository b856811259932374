"""Whether the node tier can run here."""

from __future__ import annotations

import os

from k8s_backend.local.control_plane import BuildError, ControlPlaneBuilder
from k8s_backend.local.node import NodeBuilder
from k8s_backend.local.node.images import have_image_tools


def node_missing() -> str | None:
    """Why the node tier cannot run here (one line), or None."""
    if os.geteuid() != 0:
        return "a real node needs root (containerd, runc, cgroups, a bridge)"
    try:
        ControlPlaneBuilder(progress=lambda line: print(line, flush=True)).ensure()
        NodeBuilder(progress=lambda line: print(line, flush=True)).ensure()
    except BuildError as error:
        return str(error).splitlines()[0]
    return have_image_tools()
