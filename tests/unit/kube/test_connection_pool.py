"""The official client's connection pool holds every request the backend has in flight at once.

Its default is 5 connections per CPU, and urllib3 closes a connection handed back to a full pool: a 1-CPU
driver with 8 creates in flight opened (and TLS-handshook) 3 new connections every allocation round.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest

from k8s_backend.allocation.adaptive import MAX_CONCURRENCY, creates_in_flight
from k8s_backend.assembly import wiring
from k8s_backend.conf import KubernetesConf
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.config import build_client_settings

MASTER = "https://127.0.0.1:6443"  # never connected to: building a client sends nothing


def pool_size(api: Any) -> int:
    return int(api._api_client.rest_client.pool_manager.connection_pool_kw["maxsize"])


@pytest.fixture
def one_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multiprocessing, "cpu_count", lambda: 1)


@pytest.mark.usefixtures("one_cpu")
def test_the_pool_is_at_least_the_connections_asked_for() -> None:
    conf = ApiClientConf(master=MASTER, oauth_token="t")
    assert build_client_settings(conf, environ={}).configuration.connection_pool_maxsize == 5
    assert build_client_settings(conf, environ={}, connections=3).configuration.connection_pool_maxsize == 5
    assert build_client_settings(conf, environ={}, connections=16).configuration.connection_pool_maxsize == 16


@pytest.mark.usefixtures("one_cpu")
@pytest.mark.parametrize("concurrency", [0, 30])
def test_the_backend_s_client_has_a_connection_for_each_create_in_flight_and_more(concurrency: int) -> None:
    conf = KubernetesConf.from_spark_conf({
        "spark.master": f"k8s://{MASTER}",
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.authenticate.oauthToken": "t",
        "spark.kubernetes.allocation.batch.concurrency": str(concurrency),
    })  # fmt: skip
    api = wiring._real_api(conf)
    try:
        assert isinstance(api, OfficialKubernetesApi)
        in_flight = creates_in_flight(concurrency)
        assert in_flight == max(MAX_CONCURRENCY, concurrency)
        assert pool_size(api) == in_flight + wiring.OTHER_CONNECTIONS
    finally:
        api.close()
