"""What the fake fills in and rewrites as a real API server does (each found by a contract test on a
real kube-apiserver): canonical quantities, requests from limits, pod defaults, qosClass, empty maps."""

from __future__ import annotations

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.kube.port import CONFIG_MAPS, PODS, ForbiddenError
from k8s_backend.memkube.api import SERVICE_ACCOUNTS, FakeKubernetes
from k8s_backend.memkube.defaults import canonical_quantity


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("1000m", "1"),
        ("1024Mi", "1Gi"),
        ("0.5", "500m"),
        ("0.5Gi", "512Mi"),
        ("1.5Gi", "1536Mi"),
        ("1408Mi", "1408Mi"),
        ("2000", "2k"),
        ("100M", "100M"),
        ("1e3", "1e3"),
        ("1500m", "1500m"),
        ("0.5Ki", "512"),
        (2, "2"),
        ("0", "0"),
        ("0Gi", "0"),
        ("1.5", "1500m"),
    ],
)
def test_quantities_are_written_back_in_canonical_form(given: object, stored: str) -> None:
    assert canonical_quantity(given) == stored


def test_a_pod_gets_the_servers_defaults_and_its_qos_class() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    body = {
        "metadata": {"name": "p", "labels": {}, "annotations": {}},
        "spec": {
            "containers": [
                {"name": "a", "image": "busybox", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "image": "busybox:1", "ports": [{"containerPort": 80}]},
            ]
        },
    }
    created = fake.create(PODS, "default", body)
    assert "labels" not in created["metadata"] and "annotations" not in created["metadata"]
    spec = created["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    a, b = spec["containers"]
    assert a["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert (a["imagePullPolicy"], b["imagePullPolicy"]) == ("Always", "IfNotPresent")
    assert b["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert created["status"]["qosClass"] == "Burstable"  # b has no limits
    guaranteed = fake.create(
        PODS, "default", {"metadata": {"name": "g"}, "spec": {"containers": [body["spec"]["containers"][0]]}}
    )
    assert guaranteed["status"]["qosClass"] == "Guaranteed"


def test_given_values_are_kept() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    fake.create(SERVICE_ACCOUNTS, "default", {"metadata": {"name": "spark"}})
    spec = {"restartPolicy": "Never", "serviceAccountName": "spark", "terminationGracePeriodSeconds": 5,
            "containers": [{"name": "a", "image": "x:1", "imagePullPolicy": "Never"}]}  # fmt: skip
    created = fake.create(PODS, "default", {"metadata": {"name": "p"}, "spec": spec})["spec"]
    assert created["restartPolicy"] == "Never"
    assert created["serviceAccountName"] == "spark"
    assert created["terminationGracePeriodSeconds"] == 5
    assert created["containers"][0]["imagePullPolicy"] == "Never"
    assert (
        "labels"
        not in fake.create(CONFIG_MAPS, "default", {"metadata": {"name": "c", "labels": {}}})["metadata"]
    )


def test_a_pod_naming_a_missing_service_account_is_forbidden_until_it_exists() -> None:
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    body = {"metadata": {"name": "p"}, "spec": {"serviceAccountName": "spark", "containers": [
        {"name": "a", "image": "x:1"}]}}  # fmt: skip
    with pytest.raises(ForbiddenError, match='serviceaccount "spark" not found'):
        fake.create(PODS, "ns", body)
    fake.create(SERVICE_ACCOUNTS, "other", {"metadata": {"name": "spark"}})
    with pytest.raises(ForbiddenError):  # another namespace's account is no help
        fake.create(PODS, "ns", body)
    fake.create(SERVICE_ACCOUNTS, "ns", {"metadata": {"name": "spark"}})
    assert fake.create(PODS, "ns", body)["spec"]["serviceAccountName"] == "spark"
