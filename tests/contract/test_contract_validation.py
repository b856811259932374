"""What a real API server refuses that the fakes once accepted (an audit of FakeKubernetes against
kube-apiserver v1.37): sub-paths leaving their volume, relative NFS paths, storage class names that are
not DNS subdomains, a grace period beyond int64, and creates in a namespace that is being deleted."""

from __future__ import annotations

from typing import Any

import pytest
from contract_objects import NS, pod

from k8s_backend.kube.port import (
    PODS,
    PVCS,
    BadRequestError,
    ForbiddenError,
    InvalidError,
    KubernetesApi,
    Obj,
)


def with_volume(mount: dict[str, Any], volume: Obj | None = None) -> Obj:
    body = pod("p1")
    body["spec"]["volumes"] = [{"name": "data", **(volume or {"emptyDir": {}})}]
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data", **mount}]
    return body


def claim(storage_class: str) -> Obj:
    return {
        "metadata": {"name": "data-1"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


MOUNT = "spec.containers[0].volumeMounts"  # the real server names no index
NFS = {"nfs": {"server": "nfs.example.com", "path": "exports/data"}}


@pytest.mark.parametrize(
    ("body", "field", "value", "problem"),
    [
        (with_volume({"subPath": "/etc"}), f"{MOUNT}.subPath", "/etc", "must be a relative path"),
        (with_volume({"subPath": "a/../../etc"}), f"{MOUNT}.subPath", "a/../../etc", "must not contain '..'"),
        (
            with_volume({"subPathExpr": "../$(POD)"}),
            f"{MOUNT}.subPathExpr",
            "../$(POD)",
            "must not contain '..'",
        ),
        (with_volume({}, NFS), "spec.volumes[0].nfs.path", "exports/data", "must be an absolute path"),
    ],
)
def test_paths_that_leave_their_volume_are_invalid(
    api: KubernetesApi, body: Obj, field: str, value: str, problem: str
) -> None:
    with pytest.raises(InvalidError) as caught:
        api.create(PODS, NS, body)
    assert f'{field}: Invalid value: "{value}": {problem}' in caught.value.message


def test_sub_paths_inside_their_volume_are_fine(api: KubernetesApi) -> None:
    created = api.create(PODS, NS, with_volume({"subPath": "a/b..c"}))
    assert created["spec"]["containers"][0]["volumeMounts"][0]["subPath"] == "a/b..c"
    body = with_volume({}, {"nfs": {"server": "nfs.example.com", "path": "/exports/data"}})
    body["metadata"]["name"] = "p2"
    api.create(PODS, NS, body)


@pytest.mark.parametrize("storage_class", ["Fast", "fast ssd", "-fast"])
def test_storage_class_names_are_dns_subdomains(api: KubernetesApi, storage_class: str) -> None:
    with pytest.raises(InvalidError) as caught:
        api.create(PVCS, NS, claim(storage_class))
    assert f'spec.storageClassName: Invalid value: "{storage_class}": a lowercase RFC 1123 subdomain' in (
        caught.value.message
    )
    assert api.create(PVCS, NS, claim("fast.ssd-1"))["spec"]["storageClassName"] == "fast.ssd-1"


@pytest.mark.parametrize("grace", [2**63, 1e30])
def test_a_grace_period_beyond_int64_cannot_be_decoded(api: KubernetesApi, grace: object) -> None:
    body = pod("p1")
    body["spec"]["terminationGracePeriodSeconds"] = grace
    with pytest.raises(BadRequestError) as caught:
        api.create(PODS, NS, body)
    assert "terminationGracePeriodSeconds" in caught.value.message


def test_a_claims_quantities_are_canonical(api: KubernetesApi) -> None:
    body = claim("fast")
    body["spec"]["resources"]["requests"]["storage"] = "1024Mi"
    assert api.create(PVCS, NS, body)["spec"]["resources"]["requests"] == {"storage": "1Gi"}


def test_a_pod_naming_a_missing_service_account_is_forbidden(api: KubernetesApi) -> None:
    body = pod("p1")
    body["spec"]["serviceAccountName"] = "nope"
    with pytest.raises(ForbiddenError) as caught:
        api.create(PODS, NS, body)
    assert (
        f'error looking up service account {NS}/nope: serviceaccount "nope" not found' in caught.value.message
    )
