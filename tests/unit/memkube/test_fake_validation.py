"""FakeKubernetes validation: names, labels, containers, quantities, config maps, owner references."""

from __future__ import annotations

from typing import Any

import pytest
from fake_support import TEST_NAMESPACES

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    NAMESPACES,
    POD_GROUPS,
    PODS,
    SERVICES,
    BadRequestError,
    InvalidError,
    Obj,
    Resource,
)
from k8s_backend.testing import FakeKubernetes


def pod(name: str = "p", containers: list[Obj] | None = None, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": containers if containers is not None else [{"name": "c", "image": "i"}],
            **spec,
        },
    }


def container(**resources: dict[str, Any]) -> Obj:
    return {"name": "c", "image": "i", "resources": resources}


def typed(resource: Resource, body: Obj) -> Obj:
    """``body`` with apiVersion and kind, which a custom resource (a PodGroup) must carry."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, **body}


def message_of(resource: Resource, body: Obj) -> str:
    with pytest.raises(InvalidError) as caught:
        FakeKubernetes(namespaces=TEST_NAMESPACES).create(resource, "ns", body)
    return caught.value.message


@pytest.mark.parametrize(
    ("resource", "name", "ok"),
    [
        (PODS, "exec-1.part", True),
        (PODS, "Exec", False),
        (PODS, "a" * 253, True),
        (PODS, "a" * 254, False),
        (CONFIG_MAPS, "1-config", True),
        (SERVICES, "1-svc", True),  # a DNS-1123 label since RelaxedServiceNameValidation (1.34+)
        (SERVICES, "Svc", False),
        (SERVICES, "svc.x", False),
        (SERVICES, "a" * 64, False),
        (NAMESPACES, "ns.x", False),  # DNS-1123 label
        (POD_GROUPS, "gang.1", True),
    ],
)
def test_name_rules_depend_on_the_kind(resource: Resource, name: str, ok: bool) -> None:
    body = pod(name) if resource == PODS else typed(resource, {"metadata": {"name": name}})
    fake = FakeKubernetes(namespaces=TEST_NAMESPACES)
    if ok:
        fake.create(resource, "ns", body)
    else:
        with pytest.raises(InvalidError, match=r"metadata\.name: Invalid value"):
            fake.create(resource, "ns", body)


def test_invalid_namespace_names_are_rejected() -> None:
    with pytest.raises(InvalidError, match=r"metadata\.namespace"):
        FakeKubernetes(namespaces=TEST_NAMESPACES).create(CONFIG_MAPS, "Bad_NS", {"metadata": {"name": "c"}})


def test_the_message_reads_like_the_api_server() -> None:
    assert message_of(PODS, pod("Bad")).startswith(
        'Pod "Bad" is invalid: metadata.name: Invalid value: "Bad": a lowercase RFC 1123 subdomain must '
    )
    several = message_of(PODS, pod("Bad", containers=[{"name": "c"}]))
    assert several.startswith('Pod "Bad" is invalid: [metadata.name: Invalid value: "Bad"')
    assert several.endswith("spec.containers[0].image: Required value]")
    assert message_of(POD_GROUPS, typed(POD_GROUPS, {"metadata": {"name": "G"}})).startswith(
        'PodGroup.scheduling.volcano.sh "G" is invalid'
    )


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (pod(containers=[]), "spec.containers: Required value"),
        ({"metadata": {"name": "p"}}, "spec: Required value"),
        (pod(containers=[{"image": "i"}]), "spec.containers[0].name: Required value"),
        (pod(containers=[{"name": "C", "image": "i"}]), 'spec.containers[0].name: Invalid value: "C"'),
        (
            pod(containers=[{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]),
            'spec.containers[1].name: Duplicate value: "c"',
        ),
        (
            pod(initContainers=[{"name": "c", "image": "i"}]),
            'spec.containers[0].name: Duplicate value: "c"',
        ),
        (pod(initContainers=[{"name": "init"}]), "spec.initContainers[0].image: Required value"),
        (pod(containers=[container(requests={"cpu": "-1"})]), "must be greater than or equal to 0"),
        (
            pod(containers=[container(requests={"cpu": "2"}, limits={"cpu": "1"})]),
            'spec.containers[0].resources.requests: Invalid value: "2": '
            "must be less than or equal to cpu limit of 1",
        ),
        (pod(containers=[container(limits={"gpu": "1"})]), "must be a standard resource for containers"),
        (
            {
                "metadata": {"name": "p", "labels": {"a": 1}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.labels[a]: Invalid value: 1: must be a string",
        ),
        (
            {
                "metadata": {"name": "p", "annotations": {"bad key": "any value is fine"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            'metadata.annotations: Invalid value: "bad key"',
        ),
        (
            {
                "metadata": {
                    "name": "p",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "o"}],
                },
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "metadata.ownerReferences[0].uid: Required value",
        ),
    ],
)
def test_pod_validation(body: Obj, fragment: str) -> None:
    assert fragment in message_of(PODS, body)


@pytest.mark.parametrize(
    ("quantity", "fragment"),
    [
        ("1GB", "quantities must match the regular expression"),
        ("1K", "unable to parse quantity's suffix"),
        (True, "quantities must match the regular expression"),
    ],
)
def test_unreadable_quantities_are_bad_requests_as_the_body_cannot_be_decoded(
    quantity: Any, fragment: str
) -> None:
    # A real API server answers 400 (the body is not a Pod), not 422 with the field.
    with pytest.raises(BadRequestError, match=fragment):
        FakeKubernetes(namespaces=TEST_NAMESPACES).create(
            PODS, "ns", pod(containers=[container(limits={"memory": quantity})])
        )


def test_blanks_around_a_quantity_are_trimmed() -> None:
    created = FakeKubernetes(namespaces=TEST_NAMESPACES).create(
        PODS, "ns", pod(containers=[container(limits={"memory": " 1Gi"})])
    )
    assert created["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"


@pytest.mark.parametrize(
    "resources",
    [
        {"limits": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1G", "nvidia.com/gpu": 1}},
        {"requests": {"cpu": "500m", "memory": "512Mi", "hugepages-2Mi": "2Mi"}, "limits": {"cpu": 1}},
        # Forms a copy of the parser used to refuse or crash on, which the API server accepts.
        {"limits": {"cpu": "1e3", "memory": "1Ei", "ephemeral-storage": "1E"}},
        {"requests": {"cpu": 0.25}, "limits": {"memory": "1e30"}},
    ],
)
def test_valid_resources_are_accepted(resources: Obj) -> None:
    FakeKubernetes(namespaces=TEST_NAMESPACES).create(PODS, "ns", pod(containers=[container(**resources)]))


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"metadata": {"name": "c"}, "data": {"bad key": "v"}}, "data[bad key]: Invalid value"),
        ({"metadata": {"name": "c"}, "data": {"k": 1}}, "data[k]: Invalid value: 1: must be a string"),
        ({"metadata": {"name": "c"}, "data": {"k": "v"}, "binaryData": {"k": "dg=="}}, "Duplicate value"),
    ],
)
def test_config_map_validation(body: Obj, fragment: str) -> None:
    assert fragment in message_of(CONFIG_MAPS, body)
