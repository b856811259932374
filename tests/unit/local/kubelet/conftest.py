from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.testing import FakeKubernetes


@pytest.fixture
def fake() -> FakeKubernetes:
    return FakeKubernetes(graceful_pod_deletion=True)


@pytest.fixture
def kubelet(fake: FakeKubernetes, tmp_path: Path) -> Iterator[ProcessKubelet]:
    with ProcessKubelet(
        fake,
        work_dir=tmp_path,
        nodes=[Node.of("node-1", cpu="4", memory="4Gi")],
        images=ImagePolicy(backoff_initial=0.05),
        restart_backoff=0.05,
        stop_grace=1.0,
    ) as running:
        yield running
