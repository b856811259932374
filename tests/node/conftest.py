"""Fixtures of the ``node`` tier: a real control plane with a real node (kubelet, containerd, runc) that
runs pods in containers of the images built here.

Skipped with a one-line reason when something is missing: root, Go and the control plane, the node's
binaries, or the tools the images need (mmdebstrap).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from node_env import node_missing

from k8s_backend.testing import LocalCluster


@pytest.fixture(scope="module")
def node_cluster() -> Iterator[LocalCluster]:
    why = node_missing()
    if why is not None:
        pytest.skip(why)
    with LocalCluster(control_plane="kubernetes", runtime="containers") as cluster:
        yield cluster
