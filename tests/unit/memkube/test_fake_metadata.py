"""FakeKubernetes: server-set metadata, defaults, error bodies and snapshots."""

from __future__ import annotations

import pytest
from fake_support import TEST_NAMESPACES
from pytest_mock import MockerFixture

from k8s_backend.common import ManualClock
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    NAMESPACES,
    PODS,
    BadRequestError,
    ConflictError,
    InvalidError,
    KubernetesApi,
    NotFoundError,
    Obj,
)
from k8s_backend.testing import FakeKubernetes

START = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def pod(name: str, **meta: object) -> Obj:
    return {"metadata": {"name": name, **meta}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def fake(clock: ManualClock) -> FakeKubernetes:
    return FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock, seed=7)


def test_is_a_kubernetes_api(fake: FakeKubernetes) -> None:
    assert isinstance(fake, KubernetesApi)


def test_creation_timestamp_comes_from_the_clock(fake: FakeKubernetes, clock: ManualClock) -> None:
    assert fake.create(PODS, "ns", pod("a"))["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    clock.advance(61.7)
    assert fake.create(PODS, "ns", pod("b"))["metadata"]["creationTimestamp"] == "2023-11-14T22:14:21Z"


def test_resource_version_is_global_and_bumped_on_every_write(fake: FakeKubernetes) -> None:
    start = int(fake.resource_version)
    a = fake.create(PODS, "ns", pod("a"))
    b = fake.create(CONFIG_MAPS, "other", {"metadata": {"name": "c"}})
    fake.patch(PODS, "ns", "a", {"metadata": {"labels": {"x": "1"}}})
    fake.delete(CONFIG_MAPS, "other", "c")
    assert int(a["metadata"]["resourceVersion"]) == start + 1
    assert int(b["metadata"]["resourceVersion"]) == start + 2
    assert int(fake.resource_version) == start + 4
    assert fake.list(CONFIG_MAPS, None).resource_version == fake.resource_version


def test_empty_store_never_reports_version_zero() -> None:
    # "0" would mean "any version" to a watch resuming from this list.
    assert FakeKubernetes(namespaces=TEST_NAMESPACES).list(PODS, "ns").resource_version != "0"


def test_uids_and_generated_names_are_reproducible_with_a_seed(clock: ManualClock) -> None:
    def run() -> tuple[str, str]:
        fake = FakeKubernetes(namespaces=TEST_NAMESPACES, clock=clock, seed=3)
        created = fake.create(PODS, "ns", {**pod(""), "metadata": {"generateName": "exec-"}})
        return created["metadata"]["uid"], created["metadata"]["name"]

    assert run() == run()
    uid, name = run()
    assert len(uid) == 36
    assert name.startswith("exec-")
    assert len(name) == len("exec-") + 5


def test_colliding_generated_names_are_retried(fake: FakeKubernetes, mocker: MockerFixture) -> None:
    mocker.patch.object(fake._server._random, "choice", side_effect=list("bbbbb" + "ccccc" + "bbbbb" * 8))
    fake.create(PODS, "ns", pod("x-bbbbb"))
    generated = fake.create(PODS, "ns", {**pod(""), "metadata": {"generateName": "x-"}})
    assert generated["metadata"]["name"] == "x-ccccc"
    with pytest.raises(ConflictError):  # gives up after a few tries, like the server
        fake.create(PODS, "ns", {**pod(""), "metadata": {"generateName": "x-"}})


def test_namespace_defaults_and_must_agree(fake: FakeKubernetes) -> None:
    assert fake.create(PODS, None, pod("a"))["metadata"]["namespace"] == "default"
    assert fake.create(PODS, None, pod("b", namespace="team"))["metadata"]["namespace"] == "team"
    assert fake.create(PODS, "team", pod("c", namespace="team"))["metadata"]["namespace"] == "team"
    with pytest.raises(BadRequestError, match="does not match the namespace"):
        fake.create(PODS, "team", pod("d", namespace="other"))


def test_namespaced_reads_need_a_namespace(fake: FakeKubernetes) -> None:
    with pytest.raises(BadRequestError, match="pods are namespaced"):
        fake.get(PODS, None, "a")


def test_cluster_scoped_objects_have_no_namespace(fake: FakeKubernetes) -> None:
    created = fake.create(NAMESPACES, "ignored", {"metadata": {"name": "ns1", "namespace": "x"}})
    assert "namespace" not in created["metadata"]
    assert created["status"] == {"phase": "Active"}
    assert fake.get(NAMESPACES, None, "ns1")["metadata"]["name"] == "ns1"


def test_server_fields_in_the_body_are_replaced(fake: FakeKubernetes) -> None:
    body = pod("a", uid="mine", resourceVersion="999", creationTimestamp="2000-01-01T00:00:00Z")
    body["metadata"]["deletionTimestamp"] = "2000-01-01T00:00:00Z"
    created = fake.create(PODS, "ns", body)
    meta = created["metadata"]
    assert meta["uid"] != "mine"
    assert meta["resourceVersion"] != "999"
    assert meta["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert "deletionTimestamp" not in meta


def test_pods_start_pending_unless_a_phase_is_given(fake: FakeKubernetes) -> None:
    # qosClass: the API server sets it from the containers' resources (none here).
    assert fake.create(PODS, "ns", pod("a"))["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert fake.create(PODS, "ns", {**pod("b"), "status": {"phase": "Running"}})["status"] == {
        "phase": "Running",
        "qosClass": "BestEffort",
    }


def test_kind_and_api_version_are_filled_and_checked(fake: FakeKubernetes) -> None:
    created = fake.create(PODS, "ns", pod("a"))
    assert (created["apiVersion"], created["kind"]) == ("v1", "Pod")
    assert list(created)[:2] == ["apiVersion", "kind"]
    with pytest.raises(BadRequestError, match=r"the kind in the data \(ConfigMap\)"):
        fake.create(PODS, "ns", {**pod("b"), "kind": "ConfigMap"})
    with pytest.raises(BadRequestError, match="API version"):
        fake.create(PODS, "ns", {**pod("b"), "apiVersion": "v2"})


def test_errors_carry_a_status_body(fake: FakeKubernetes) -> None:
    with pytest.raises(NotFoundError) as missing:
        fake.get(PODS, "ns", "nope")
    assert missing.value.message == 'pods "nope" not found'
    assert missing.value.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "code": 404,
        "details": {"name": "nope", "group": "", "kind": "pods"},
    }
    fake.create(PODS, "ns", pod("a"))
    with pytest.raises(ConflictError) as exists:
        fake.create(PODS, "ns", pod("a"))
    assert exists.value.reason == "AlreadyExists"
    with pytest.raises(InvalidError) as bad:
        fake.create(PODS, "ns", pod("B"))
    assert bad.value.body is not None
    (cause,) = bad.value.body["details"]["causes"]
    assert cause["field"] == "metadata.name"
    assert cause["reason"] == "FieldValueInvalid"


def test_objects_snapshot_is_a_copy_and_records_no_call(fake: FakeKubernetes) -> None:
    fake.create(PODS, "b-ns", pod("b"))
    fake.create(PODS, "a-ns", pod("a"))
    fake.reset_calls()
    snapshot = fake.objects(PODS)
    assert [o["metadata"]["name"] for o in snapshot] == ["a", "b"]  # by namespace, then name
    assert [o["metadata"]["name"] for o in fake.objects(PODS, "b-ns")] == ["b"]
    snapshot[0]["metadata"]["name"] = "changed"
    assert fake.objects(PODS)[0]["metadata"]["name"] == "a"
    assert fake.calls == []


def test_list_items_are_sorted_by_namespace_and_name(fake: FakeKubernetes) -> None:
    for namespace, name in (("b", "x"), ("a", "z"), ("a", "y")):
        fake.create(PODS, namespace, pod(name))
    listed = fake.list(PODS, None).items
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in listed] == [
        ("a", "y"),
        ("a", "z"),
        ("b", "x"),
    ]


def test_non_numeric_resource_versions_are_bad_requests(fake: FakeKubernetes) -> None:
    with pytest.raises(BadRequestError, match="resourceVersion"):
        fake.list(PODS, "ns", resource_version="abc")
    with pytest.raises(BadRequestError, match="resourceVersion"):
        fake.watch(PODS, "ns", resource_version="-1")


def test_repr_is_short(fake: FakeKubernetes) -> None:
    before = int(fake.resource_version)  # the test namespaces were created first
    fake.create(PODS, "ns", pod("a"))
    assert repr(fake) == f"<InMemoryKubernetes rv={before + 1} pods=1>"
