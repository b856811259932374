"""The official-client adapter over HTTP against ApiServer(FakeKubernetes()): requests, answers, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from http_helpers import TOKEN, Raw, make_api, pod

from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    JSON_PATCH,
    NAMESPACES,
    POD_GROUPS,
    PODS,
    PVCS,
    SECRETS,
    SERVICES,
    STRATEGIC_MERGE_PATCH,
    BadRequestError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ObjectList,
    Resource,
    ServerError,
    UnauthorizedError,
)
from k8s_backend.kube.retry import RetryPolicy
from k8s_backend.local.apiserver import ApiServer, RequestRecord
from k8s_backend.local.apiserver import server as apiserver_module
from k8s_backend.testing import FakeKubernetes

pytestmark = pytest.mark.http

BODIES: dict[str, dict[str, Any]] = {
    "configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}},
    "services": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"clusterIP": "None", "ports": [{"port": 7078}]},
    },
    "persistentvolumeclaims": {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "x"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    },
    "secrets": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "data": {"token": "dG9r"}},
    "podgroups": {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "x"},
        "spec": {"minMember": 1},
    },
}


@pytest.mark.parametrize(
    "resource", [CONFIG_MAPS, SERVICES, SECRETS, PVCS, POD_GROUPS], ids=lambda r: r.plural
)
def test_crud_of_each_namespaced_kind(
    api: OfficialKubernetesApi, fake: FakeKubernetes, resource: Resource
) -> None:
    created = api.create(resource, "default", BODIES[resource.plural])
    assert created["metadata"]["resourceVersion"]
    assert api.get(resource, "default", "x")["metadata"]["uid"] == created["metadata"]["uid"]
    listed = api.list(resource, "default")
    assert [o["metadata"]["name"] for o in listed.items] == ["x"]
    assert listed.items[0]["kind"] == resource.kind
    patched = api.patch(resource, "default", "x", {"metadata": {"labels": {"p": "1"}}})
    assert patched["metadata"]["labels"] == {"p": "1"}
    assert fake.objects(resource, "default")[0]["metadata"]["labels"] == {"p": "1"}
    api.delete(resource, "default", "x")
    assert fake.objects(resource, "default") == []


def test_namespaces_are_cluster_scoped(api: OfficialKubernetesApi) -> None:
    api.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert api.get(NAMESPACES, None, "team")["metadata"]["name"] == "team"
    assert "team" in [n["metadata"]["name"] for n in api.list(NAMESPACES, None).items]


def test_label_and_field_selectors(api: OfficialKubernetesApi, fake: FakeKubernetes) -> None:
    fake.create(NAMESPACES, None, {"metadata": {"name": "other"}})
    api.create(PODS, "default", pod("a", app="x", role="exec"))
    api.create(PODS, "default", pod("b", app="x", role="driver"))
    api.create(PODS, "other", pod("c", "other", app="x", role="exec"))
    fake.patch_status(PODS, "default", "a", {"phase": "Running"})

    def names(result: ObjectList) -> list[str]:
        return sorted(o["metadata"]["name"] for o in result.items)

    assert names(api.list(PODS, "default", label_selector="app=x,role!=driver")) == ["a"]
    assert names(api.list(PODS, None, label_selector="role in (exec)")) == ["a", "c"]
    assert names(api.list(PODS, "default", field_selector="status.phase=Running")) == ["a"]
    with pytest.raises(BadRequestError):
        api.list(PODS, "default", label_selector="a in (")


def test_patch_types(api: OfficialKubernetesApi) -> None:
    body = pod("p")
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    api.create(PODS, "default", body)
    # Strategic merge merges containers by name; a JSON merge patch would replace the list.
    patched = api.patch(
        PODS,
        "default",
        "p",
        {
            "metadata": {"labels": {"s": "1"}},
            "spec": {"containers": [{"name": "side", "image": "busybox:2"}]},
        },
        patch_type=STRATEGIC_MERGE_PATCH,
    )
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("main", "spark:4.3"),
        ("side", "busybox:2"),
    ]
    patched = api.patch(
        PODS,
        "default",
        "p",
        [{"op": "add", "path": "/metadata/labels/j", "value": "2"}],
        patch_type=JSON_PATCH,
    )
    assert patched["metadata"]["labels"] == {"s": "1", "j": "2"}
    with pytest.raises(BadRequestError):
        api.patch(PODS, "default", "p", {"not": "a list"}, patch_type=JSON_PATCH)


def test_errors_carry_the_server_message(api: OfficialKubernetesApi, fake: FakeKubernetes) -> None:
    with pytest.raises(NotFoundError, match='pods "nope" not found'):
        api.get(PODS, "default", "nope")
    api.create(PODS, "default", pod("p"))
    with pytest.raises(ConflictError, match="already exists"):
        api.create(PODS, "default", pod("p"))
    bad = pod("Bad_Name")
    with pytest.raises(InvalidError, match="Bad_Name") as info:
        api.create(PODS, "default", bad)
    assert info.value.body is not None and info.value.body["reason"] == "Invalid"
    assert len(fake.calls_of("create")) == 3  # 422 and 409 are not retried


def test_injected_429_and_500_are_retried(
    api: OfficialKubernetesApi, fake: FakeKubernetes, sleeps: list[float]
) -> None:
    fake.fail_next("create", PODS, status=429, retry_after=2)
    fake.fail_next("create", PODS, status=500, count=1)
    api.create(PODS, "default", pod("p"))
    assert len(fake.calls_of("create")) == 3
    assert sleeps[0] >= 2.0 and len(sleeps) == 2
    fake.fail_next("get", PODS, status=503, count=20)
    with pytest.raises(ServerError):
        api.get(PODS, "default", "p")
    assert len(fake.calls_of("get")) == RetryPolicy().max_attempts


def test_429_answer_has_retry_after_header_and_status_body(raw: Raw, fake: FakeKubernetes) -> None:
    fake.fail_next("list", PODS, status=429, retry_after=3)
    code, headers, body = raw.request("GET", "/api/v1/namespaces/default/pods")
    assert code == 429
    assert headers["retry-after"] == "3"
    assert body["kind"] == "Status" and body["code"] == 429 and body["reason"] == "TooManyRequests"


def test_bad_or_missing_token_is_401(server: ApiServer, sleeps: list[float]) -> None:
    wrong = make_api(server, sleeps, token="wrong")
    try:
        with pytest.raises(UnauthorizedError):
            wrong.list(PODS, "default")
    finally:
        wrong.close()
    code, _, body = Raw(server.url, token=None).request("GET", "/api/v1/namespaces/default/pods")
    assert code == 401 and body["reason"] == "Unauthorized"
    assert Raw(server.url, token=None).request("GET", "/healthz")[0] == 200


def test_the_token_is_compared_in_constant_time(server: ApiServer, mocker: Any) -> None:
    compare = mocker.spy(apiserver_module.hmac, "compare_digest")
    assert not server.authorized("Bearer wrong")
    assert server.authorized(f"Bearer {TOKEN}")
    assert [c.args for c in compare.call_args_list] == [(b"wrong", TOKEN.encode()), (TOKEN.encode(),) * 2]


def test_put_replaces_with_optimistic_concurrency(raw: Raw, api: OfficialKubernetesApi) -> None:
    created = api.create(CONFIG_MAPS, "default", BODIES["configmaps"])
    replaced = {**created, "data": {"k": "v2"}}
    code, _, body = raw.request("PUT", "/api/v1/namespaces/default/configmaps/x", replaced)
    assert code == 200 and body["data"] == {"k": "v2"}
    code, _, body = raw.request("PUT", "/api/v1/namespaces/default/configmaps/x", replaced)  # stale RV
    assert code == 409 and body["reason"] == "Conflict"
    code, _, body = raw.request("PUT", "/api/v1/namespaces/default/configmaps/other", replaced)
    assert code == 400 and "does not match the name on the URL" in body["message"]


def test_pod_status_subresource(raw: Raw, api: OfficialKubernetesApi) -> None:
    created = api.create(PODS, "default", pod("p"))
    code, _, body = raw.request(
        "PUT", "/api/v1/namespaces/default/pods/p/status", {**created, "status": {"phase": "Running"}}
    )
    assert code == 200 and body["status"]["phase"] == "Running"
    code, _, body = raw.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        {"status": {"podIP": "10.0.0.1"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200 and body["status"] == {"phase": "Running", "podIP": "10.0.0.1"}
    # The main resource ignores status, as with a real status subresource.
    patched = api.patch(PODS, "default", "p", {"status": {"phase": "Failed"}})
    assert patched["status"]["phase"] == "Running"


def test_delete_options_body_and_collection_delete(
    raw: Raw, fake: FakeKubernetes, api: OfficialKubernetesApi
) -> None:
    for name in ("a", "b", "c"):
        api.create(PODS, "default", pod(name, app="x" if name != "c" else "y"))
    code, _, body = raw.request(
        "DELETE", "/api/v1/namespaces/default/pods/a", {"kind": "DeleteOptions", "gracePeriodSeconds": 0}
    )
    assert code == 200 and body["metadata"]["name"] == "a"
    assert fake.calls_of("delete")[-1].name == "a"
    api.delete_collection(PODS, "default", label_selector="app=x")
    assert [p["metadata"]["name"] for p in fake.objects(PODS, "default")] == ["c"]
    code, _, body = raw.request("DELETE", "/api/v1/namespaces/default/pods/zzz")
    assert code == 404 and body["kind"] == "Status"


@pytest.mark.parametrize(
    ("options", "query"),
    [
        ({"propagationPolicy": "Orphan"}, ""),
        ({"orphanDependents": True}, ""),
        (None, "?propagationPolicy=Orphan"),
    ],
    ids=["body", "legacy-orphanDependents", "query"],
)
def test_an_orphaning_delete_over_http(
    raw: Raw, fake: FakeKubernetes, options: dict[str, Any] | None, query: str
) -> None:
    owner = fake.create(CONFIG_MAPS, "default", {"metadata": {"name": "owner"}})
    dependent = pod("dep")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    dependent["metadata"]["ownerReferences"] = [ref]
    fake.create(PODS, "default", dependent)
    code, _, _ = raw.request("DELETE", f"/api/v1/namespaces/default/configmaps/owner{query}", options)
    assert code == 200
    (kept,) = fake.objects(PODS, "default")
    assert "ownerReferences" not in kept["metadata"]


@pytest.mark.parametrize(
    ("path", "options", "says"),
    [
        ("/pods/a", {"propagationPolicy": "Foreground"}, "propagationPolicy 'Foreground' is not supported"),
        ("/pods/a", {"propagationPolicy": "Sideways"}, "use one of Background, Orphan"),
        ("/pods", {"propagationPolicy": "Orphan"}, "not a collection's"),
    ],
)
def test_delete_policies_this_server_does_not_serve_are_refused(
    raw: Raw, fake: FakeKubernetes, path: str, options: dict[str, Any], says: str
) -> None:
    fake.create(PODS, "default", pod("a"))
    code, _, body = raw.request("DELETE", f"/api/v1/namespaces/default{path}", options)
    assert code == 400 and says in body["message"]
    assert [p["metadata"]["name"] for p in fake.objects(PODS, "default")] == ["a"]  # nothing deleted


def test_graceful_pod_deletion_over_http(sleeps: list[float]) -> None:
    fake = FakeKubernetes(graceful_pod_deletion=True)
    with ApiServer(fake, token=TOKEN) as server:
        api = make_api(server, sleeps)
        api.create(PODS, "default", pod("p"))
        api.delete(PODS, "default", "p", grace_period_seconds=30)
        assert api.get(PODS, "default", "p")["metadata"].get("deletionTimestamp")
        fake.finalize(PODS, "default", "p")
        with pytest.raises(NotFoundError):
            api.get(PODS, "default", "p")
        api.close()


def test_discovery_documents(raw: Raw) -> None:
    assert raw.request("GET", "/version")[2]["major"] == "1"
    assert raw.request("GET", "/api")[2]["versions"] == ["v1"]
    groups = raw.request("GET", "/apis")[2]["groups"]
    assert {"name": "scheduling.volcano.sh"}.items() <= groups[0].items()
    core = {r["name"] for r in raw.request("GET", "/api/v1")[2]["resources"]}
    assert {"pods", "pods/status", "configmaps", "services", "persistentvolumeclaims", "namespaces"} <= core
    volcano = raw.request("GET", "/apis/scheduling.volcano.sh/v1beta1")[2]
    assert volcano["resources"][0]["kind"] == "PodGroup"
    assert raw.request("GET", "/apis/nothing.example.com/v1")[0] == 404


def test_official_client_models_read_the_answers(raw: Raw, api: OfficialKubernetesApi) -> None:
    # Users of the official client's typed API must be able to read the server's answers as models.
    # (Deserialized directly: importing CoreV1Api alone costs seconds.)
    from kubernetes import client as k8s

    models = k8s.ApiClient()
    api.create(PODS, "default", pod("p", app="x"))
    _, _, listed = raw.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dx")
    pods = models.deserialize(json.dumps(listed), "V1PodList", "application/json")
    assert [p.metadata.name for p in pods.items] == ["p"]
    _, _, deleted = raw.request("DELETE", "/api/v1/namespaces/default/pods/p")
    assert models.deserialize(json.dumps(deleted), "V1Pod", "application/json").metadata.name == "p"
    _, _, version = raw.request("GET", "/version")
    assert models.deserialize(json.dumps(version), "VersionInfo", "application/json").major == "1"


def test_request_log_records_method_path_and_status(server: ApiServer, api: OfficialKubernetesApi) -> None:
    server.clear_request_log()
    with pytest.raises(NotFoundError):
        api.get(PODS, "default", "nope")
    api.list(PODS, "default", label_selector="a=b")
    assert server.request_log == [
        RequestRecord("GET", "/api/v1/namespaces/default/pods/nope", 404),
        RequestRecord("GET", "/api/v1/namespaces/default/pods?labelSelector=a%3Db", 200),
    ]


def test_a_bounded_request_log_keeps_the_latest(fake: FakeKubernetes) -> None:
    with ApiServer(fake, token=TOKEN, request_log_size=2) as bounded:
        api = make_api(bounded, [])
        for name in ("a", "b", "c"):
            with pytest.raises(NotFoundError):
                api.get(PODS, "default", name)
        assert [record.path.rsplit("/", 1)[-1] for record in bounded.request_log] == ["b", "c"]
        api.close()


def test_unknown_paths_and_methods(raw: Raw) -> None:
    assert raw.request("GET", "/nothing")[0] == 404
    assert raw.request("GET", "/api/v1/namespaces/default/widgets")[0] == 404
    assert raw.request("POST", "/api/v1/pods", pod("p"))[0] == 405
    code, _, body = raw.request("POST", "/api/v1/namespaces/default/pods", None)
    assert code == 400 and body["kind"] == "Status"
