"""A real Kubernetes node on this machine (an opt-in test kit): kubelet, containerd, runc and the CNI
plugins built from their Go modules, and the images its pods run, built without any registry.

- :mod:`k8s_backend.local.node.build`: builds and caches the node's pinned binaries (needs Go >= 1.26,
  and Debian's ``libseccomp-dev`` and ``pkg-config`` for runc, installed when missing and root).

``python -m k8s_backend.local.node build`` prebuilds the cache (for CI).
"""

from __future__ import annotations

from k8s_backend.local.node.build import NodeBinaries, NodeBuilder

__all__ = ["NodeBinaries", "NodeBuilder"]
