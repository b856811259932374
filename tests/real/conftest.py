"""Fixtures for the tests of the process kubelet on a real control plane (marker ``real``).

One :class:`ControlPlane` (with kube-scheduler and the node lifecycle controller) serves a module;
the tests are skipped, with the one-line reason, when the binaries are neither cached nor buildable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from k8s_backend.local.control_plane import (
    BuildError,
    ControlPlane,
    ControlPlaneBinaries,
    ControlPlaneBuilder,
)


@pytest.fixture(scope="module")
def binaries() -> ControlPlaneBinaries:
    try:
        return ControlPlaneBuilder(progress=lambda line: print(line, flush=True)).ensure()
    except BuildError as error:
        pytest.skip(str(error).splitlines()[0])


@pytest.fixture(scope="module")
def cp(binaries: ControlPlaneBinaries) -> Iterator[ControlPlane]:
    with ControlPlane(binaries) as started:
        yield started
