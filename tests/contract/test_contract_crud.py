"""Contract: create, get and list behave like a real API server, whatever the adapter."""

from __future__ import annotations

import pytest
from contract_objects import NS, config_map, names, pod, pod_group, rv
from contract_support import Control

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    NAMESPACES,
    POD_GROUPS,
    PODS,
    PVCS,
    SERVICES,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    KubernetesApi,
    NotFoundError,
    Obj,
)


def test_create_fills_server_fields_and_get_returns_the_object(api: KubernetesApi) -> None:
    created = api.create(PODS, NS, pod("p1", {"app": "a"}))
    meta = created["metadata"]
    assert meta["name"] == "p1"
    assert meta["namespace"] == NS
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert created["status"]["phase"] == "Pending"
    fetched = api.get(PODS, NS, "p1")
    assert fetched["metadata"]["uid"] == meta["uid"]
    assert fetched["metadata"]["labels"] == {"app": "a"}


def test_every_write_gets_a_larger_resource_version(api: KubernetesApi) -> None:
    first = api.create(PODS, NS, pod("p1"))
    second = api.create(CONFIG_MAPS, NS, config_map("c1"))
    third = api.patch(PODS, NS, "p1", {"metadata": {"labels": {"x": "1"}}})
    assert rv(first) < rv(second) < rv(third)


def test_generate_name_appends_a_suffix(api: KubernetesApi) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "exec-"}
    one = api.create(PODS, NS, body)
    two = api.create(PODS, NS, body)
    assert one["metadata"]["name"].startswith("exec-")
    assert len(one["metadata"]["name"]) > len("exec-")
    assert one["metadata"]["name"] != two["metadata"]["name"]


def test_duplicate_name_is_a_conflict(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("p1"))
    with pytest.raises(ConflictError) as caught:
        api.create(PODS, NS, pod("p1"))
    assert caught.value.status == 409
    assert "already exists" in caught.value.message
    api.create(PODS, "other", pod("p1"))  # names are per namespace


def test_missing_objects_are_not_found(api: KubernetesApi) -> None:
    with pytest.raises(NotFoundError):
        api.get(PODS, NS, "nope")
    with pytest.raises(NotFoundError):
        api.patch(PODS, NS, "nope", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(NotFoundError):
        api.delete(PODS, NS, "nope")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (pod("Bad_Name"), "metadata.name: Invalid value"),
        (pod("p1", {"bad key": "v"}), "metadata.labels: Invalid value"),
        (pod("p1", {"k": "bad value"}), "metadata.labels: Invalid value"),
        ({"metadata": {"name": "p1"}, "spec": {}}, "spec.containers: Required value"),
        ({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c"}]}}, "image: Required value"),
        (
            {
                "metadata": {"name": "p1"},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "-1"}}}]},
            },
            "resources.limits[cpu]: Invalid value",
        ),
        (
            {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": " busybox:1 "}]}},
            "image: Invalid value",
        ),
        (
            pod("p1", metadata={"name": "p1", "annotations": {"a": "x" * 256 * 1024}}),
            "metadata.annotations: Too long",
        ),
        (
            {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            "metadata.name: Required value",
        ),
    ],
)
def test_invalid_objects_are_rejected_with_the_field(api: KubernetesApi, body: Obj, fragment: str) -> None:
    with pytest.raises(InvalidError) as caught:
        api.create(PODS, NS, body)
    assert caught.value.status == 422
    assert fragment in caught.value.message
    assert "is invalid" in caught.value.message


@pytest.mark.parametrize(
    ("limit", "fragment"),
    [
        ("1x", "quantities must match the regular expression"),
        ("1GB", "quantities must match the regular expression"),
        ("1K", "unable to parse quantity's suffix"),
        (True, "quantities must match the regular expression"),
    ],
)
def test_unreadable_quantities_are_bad_requests(api: KubernetesApi, limit: object, fragment: str) -> None:
    # Not 422: the body cannot even be decoded as a Pod.
    body = pod("p1")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": limit}}
    with pytest.raises(BadRequestError) as caught:
        api.create(PODS, NS, body)
    assert caught.value.status == 400
    assert 'Pod in version "v1" cannot be handled as a Pod' in caught.value.message
    assert fragment in caught.value.message


def test_blanks_around_a_quantity_are_ignored(api: KubernetesApi) -> None:
    body = pod("p1")
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": " 1Gi "}}
    created = api.create(PODS, NS, body)
    assert created["spec"]["containers"][0]["resources"]["limits"]["memory"] == "1Gi"


def test_service_names_are_dns1123_labels(api: KubernetesApi) -> None:
    # RelaxedServiceNameValidation (on by default since 1.34): a leading digit is fine, a dot is not.
    service: Obj = {"metadata": {"name": "svc.1"}, "spec": {"ports": [{"port": 80}]}}
    with pytest.raises(InvalidError, match="metadata.name: Invalid value"):
        api.create(SERVICES, NS, service)
    service["metadata"]["name"] = "Svc"
    with pytest.raises(InvalidError, match="RFC 1123 label"):
        api.create(SERVICES, NS, service)
    api.create(CONFIG_MAPS, NS, config_map("1.cm"))  # fine for a config map (a DNS-1123 subdomain)
    service["metadata"]["name"] = "1svc"
    assert api.create(SERVICES, NS, service)["metadata"]["name"] == "1svc"


def test_a_body_for_another_namespace_is_a_bad_request(api: KubernetesApi) -> None:
    body = pod("p1")
    body["metadata"]["namespace"] = "other"
    with pytest.raises(BadRequestError) as caught:
        api.create(PODS, NS, body)
    assert caught.value.message == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


def test_custom_resources_need_their_kind_and_api_version(api: KubernetesApi) -> None:
    group = pod_group("g", 1)
    del group["kind"]
    with pytest.raises(BadRequestError, match="Object 'Kind' is missing"):
        api.create(POD_GROUPS, NS, group)
    group = pod_group("g", 1)
    del group["apiVersion"]
    with pytest.raises(BadRequestError, match="does not match the expected API version"):
        api.create(POD_GROUPS, NS, group)
    created = api.create(PODS, NS, {"metadata": {"name": "p"}, "spec": pod("p")["spec"]})
    assert (created["apiVersion"], created["kind"]) == ("v1", "Pod")  # built-in kinds may leave them out


def test_list_filters_by_label_selector_and_reports_the_collection_version(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("a", {"role": "executor", "app": "x"}))
    api.create(PODS, NS, pod("b", {"role": "driver", "app": "x"}))
    last = api.create(PODS, NS, pod("c", {"role": "executor", "app": "y", "inactive": "true"}))
    api.create(PODS, "elsewhere", pod("d", {"role": "executor", "app": "x"}))
    listed = api.list(PODS, NS, label_selector="role=executor")
    assert names(listed.items) == ["a", "c"]
    assert int(listed.resource_version) >= rv(api.get(PODS, "elsewhere", "d")) > rv(last)
    assert names(api.list(PODS, NS, label_selector="role=executor,inactive!=true").items) == ["a"]
    assert names(api.list(PODS, NS, label_selector="app in (y, z)").items) == ["c"]
    assert names(api.list(PODS, NS, label_selector="app notin (y)").items) == ["a", "b"]
    assert names(api.list(PODS, NS, label_selector="inactive").items) == ["c"]
    assert names(api.list(PODS, NS, label_selector="!inactive").items) == ["a", "b"]
    assert sorted(names(api.list(PODS, None, label_selector="app=x").items)) == ["a", "b", "d"]


def test_list_filters_by_field_selector(api: KubernetesApi, control: Control) -> None:
    api.create(PODS, NS, pod("a"))
    api.create(PODS, NS, pod("b"))
    control.set_pod_status(NS, "b", {"phase": "Running"})
    assert names(api.list(PODS, NS, field_selector="status.phase=Running").items) == ["b"]
    assert names(api.list(PODS, NS, field_selector="status.phase!=Running").items) == ["a"]
    assert names(api.list(PODS, NS, field_selector="metadata.name=a").items) == ["a"]
    assert names(api.list(PODS, None, field_selector=f"metadata.namespace={NS}").items) == ["a", "b"]


def test_list_accepts_resource_version_zero(api: KubernetesApi) -> None:
    api.create(PODS, NS, pod("a"))
    assert names(api.list(PODS, NS, resource_version="0").items) == ["a"]


@pytest.mark.parametrize(
    ("label_selector", "field_selector"),
    [("a in b", ""), ("a=b c", ""), ("", "spec.containers=x"), ("", "nonsense")],
)
def test_malformed_selectors_are_bad_requests(
    api: KubernetesApi, label_selector: str, field_selector: str
) -> None:
    with pytest.raises(BadRequestError):
        api.list(PODS, NS, label_selector=label_selector, field_selector=field_selector)


def test_returned_objects_are_copies(api: KubernetesApi) -> None:
    body = pod("a", {"k": "v"})
    created = api.create(PODS, NS, body)
    body["metadata"]["labels"]["k"] = "changed"
    created["metadata"]["labels"]["k"] = "changed"
    api.get(PODS, NS, "a")["metadata"]["labels"]["k"] = "changed"
    api.list(PODS, NS).items[0]["metadata"]["labels"]["k"] = "changed"
    assert api.get(PODS, NS, "a")["metadata"]["labels"] == {"k": "v"}


def test_namespaces_are_cluster_scoped(api: KubernetesApi) -> None:
    created = api.create(NAMESPACES, None, {"metadata": {"name": "team-a"}})
    assert "namespace" not in created["metadata"]
    assert "team-a" in names(api.list(NAMESPACES, None).items)
    assert api.get(NAMESPACES, None, "team-a")["metadata"]["uid"] == created["metadata"]["uid"]


def test_other_kinds_are_stored_too(api: KubernetesApi) -> None:
    claim = {
        "metadata": {"name": "data-1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    api.create(PVCS, NS, claim)
    created = api.create(POD_GROUPS, NS, pod_group("gang-1", 3))
    assert created["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert created["kind"] == "PodGroup"
    assert api.get(POD_GROUPS, NS, "gang-1")["spec"] == {"minMember": 3}
    patched = api.patch(POD_GROUPS, NS, "gang-1", {"spec": {"minMember": 4}})
    assert patched["spec"]["minMember"] == 4
    assert names(api.list(PVCS, NS).items) == ["data-1"]


def test_injected_errors_reach_the_caller_once(api: KubernetesApi, control: Control) -> None:
    api.create(PODS, NS, pod("a"))
    control.fail_next("get", PODS, status=403, count=2)
    for _ in range(2):
        with pytest.raises(ForbiddenError):
            api.get(PODS, NS, "a")
    assert api.get(PODS, NS, "a")["metadata"]["name"] == "a"
    control.fail_next("create", CONFIG_MAPS, status=403)
    api.create(PODS, NS, pod("b"))  # another kind is not affected
    with pytest.raises(ForbiddenError):
        api.create(CONFIG_MAPS, NS, config_map("c"))


def test_quantities_are_canonical_and_requests_default_to_limits(api: KubernetesApi) -> None:
    body = pod("p1")
    body["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "1000m", "memory": "1024Mi"},
        "requests": {"cpu": "0.5"},
    }
    created = api.create(PODS, NS, body)
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "1Gi"},
    }
    assert created["status"]["qosClass"] == "Burstable"


def test_pod_defaults_are_filled_in(api: KubernetesApi) -> None:
    created = api.create(PODS, NS, pod("p1"))
    spec = created["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"]) == (
        "Always",
        "ClusterFirst",
        "default-scheduler",
    )
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["serviceAccountName"] == "default"  # the ServiceAccount admission plugin
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"  # tagged busybox:1; untagged or :latest is Always
    assert container["terminationMessagePath"] == "/dev/termination-log"


def test_empty_labels_are_omitted(api: KubernetesApi) -> None:
    created = api.create(PODS, NS, pod("p1", {}))
    assert "labels" not in created["metadata"]


def test_creating_in_a_namespace_that_does_not_exist_is_not_found(api: KubernetesApi) -> None:
    with pytest.raises(NotFoundError) as caught:
        api.create(CONFIG_MAPS, "no-such-namespace", config_map("c"))
    assert caught.value.message == 'namespaces "no-such-namespace" not found'
