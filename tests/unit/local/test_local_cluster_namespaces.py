"""A local cluster makes the namespace it is asked for, as a developer's private cluster should: the
fake (like a real API server) refuses pods in a namespace that does not exist."""

from __future__ import annotations

import pytest

from k8s_backend.kube.port import NAMESPACES, PODS, NotFoundError, Resource
from k8s_backend.local.namespaces import NamespaceNotReadyError, ensure_namespace
from k8s_backend.testing import FakeKubernetes, LocalCluster

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "python:3.11"}]}}


def test_the_fake_refuses_pods_in_a_namespace_nobody_made() -> None:
    with pytest.raises(NotFoundError, match="team-a"):
        FakeKubernetes().create(PODS, "team-a", POD)


def test_ensure_namespace_creates_it_once() -> None:
    fake = FakeKubernetes()
    assert ensure_namespace(fake, "team-a", wait_for_service_account=False) is True
    assert ensure_namespace(fake, "team-a", wait_for_service_account=False) is False
    assert ensure_namespace(fake, "default", wait_for_service_account=False) is False
    fake.create(PODS, "team-a", POD)
    assert fake.get(NAMESPACES, None, "team-a")["metadata"]["name"] == "team-a"


def test_ensure_namespace_waits_for_the_default_service_account_and_says_when_it_never_comes() -> None:
    fake = FakeKubernetes()
    fake.create(NAMESPACES, None, {"metadata": {"name": "ready"}})
    fake.create(Resource("ServiceAccount", "serviceaccounts"), "ready", {"metadata": {"name": "default"}})
    assert ensure_namespace(fake, "ready", wait_for_service_account=True) is False
    with pytest.raises(NamespaceNotReadyError, match="'late'.*'default' ServiceAccount"):
        ensure_namespace(fake, "late", wait_for_service_account=True, timeout=0.2)


def test_the_embedded_cluster_makes_the_namespace_of_spark_conf_and_api() -> None:
    with LocalCluster(run_processes=False) as cluster:
        conf = cluster.spark_conf(namespace="team-b")
        assert conf["spark.kubernetes.namespace"] == "team-b"
        cluster.fake.get(NAMESPACES, None, "team-b")
        created = cluster.api("team-c").create(PODS, "team-c", POD)
        assert created["metadata"]["namespace"] == "team-c"
