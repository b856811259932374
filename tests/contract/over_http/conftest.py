"""Fixtures for tests going through HTTP: a FakeKubernetes behind ApiServer, and clients for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from http_helpers import TOKEN, Raw, make_api

from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.local.apiserver import ApiServer
from k8s_backend.testing import FakeKubernetes


@pytest.fixture
def fake() -> FakeKubernetes:
    return FakeKubernetes()


@pytest.fixture
def server(fake: FakeKubernetes) -> Iterator[ApiServer]:
    with ApiServer(fake, token=TOKEN) as running:
        yield running


@pytest.fixture
def sleeps() -> list[float]:
    """The waits the adapter's retry policy asked for (nothing really sleeps)."""
    return []


@pytest.fixture
def api(server: ApiServer, sleeps: list[float]) -> Iterator[OfficialKubernetesApi]:
    adapter = make_api(server, sleeps)
    yield adapter
    adapter.close()


@pytest.fixture
def raw(server: ApiServer) -> Raw:
    return Raw(server.url)
