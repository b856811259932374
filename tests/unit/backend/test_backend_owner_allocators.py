"""The backend with the statefulset and deployment allocators, on the in-memory API (which has no
controllers): the owner object is made at start, the application fails naming the fix when no
controller observes it, stop deletes it; with a driver, the executors' ids come from GenerateExecID."""

from __future__ import annotations

import pytest
from backend_harness import make_harness

from k8s_backend.allocation.owner_objects import OwnerKind
from k8s_backend.kube.port import PODS, NotFoundError


def conf(kind: OwnerKind) -> dict[str, str]:
    return {"spark.kubernetes.allocation.pods.allocator": kind.value, "spark.executor.instances": "2"}


@pytest.mark.parametrize("kind", list(OwnerKind))
def test_start_makes_the_owner_and_stop_deletes_it(kind: OwnerKind) -> None:
    h = make_harness(conf(kind), driver=False)
    h.backend.start()
    h.run()
    app_id = h.backend.application_id()
    owner = h.fake.get(kind.resource, "default", kind.object_name(app_id, 0))
    assert owner["spec"]["replicas"] == 2
    assert h.backend.status()["allocator"]["targets"] == {0: 2}
    h.backend.stop()
    with pytest.raises(NotFoundError):
        h.fake.get(kind.resource, "default", kind.object_name(app_id, 0))


@pytest.mark.parametrize("kind", list(OwnerKind))
def test_without_a_controller_the_application_fails_naming_the_fix(kind: OwnerKind) -> None:
    h = make_harness(conf(kind), driver=False)
    h.backend.start()
    h.run(61.0)
    reason = h.backend.failure_reason
    assert reason is not None and "no controller observed" in reason
    assert "spark.kubernetes.allocation.pods.allocator=direct" in reason


@pytest.mark.parametrize("kind", list(OwnerKind))
def test_with_a_driver_the_executors_ids_come_from_generate_executor_id(kind: OwnerKind) -> None:
    h = make_harness(conf(kind), driver=True)
    h.backend.start()
    h.run()
    app_id = h.backend.application_id()
    template = h.fake.get(kind.resource, "default", kind.object_name(app_id, 0))["spec"]["template"]
    for name in ("p-0", "p-1"):  # what the controller makes
        h.fake.create(
            PODS, "default", {"metadata": {**template["metadata"], "name": name}, "spec": template["spec"]}
        )
    h.run(5.0)
    assert {p["metadata"]["labels"]["spark-exec-id"] for p in h.executor_pods()} == {"EXECID"}
    assert h.backend.generate_executor_id("p-1") == 1
    assert h.backend.generate_executor_id("p-0") == 2
    h.run()
    labels = {p["metadata"]["name"]: p["metadata"]["labels"]["spark-exec-id"] for p in h.executor_pods()}
    assert labels == {"p-0": "2", "p-1": "1"}
    # An executor restarted in its pod asks again: a new id, and the label follows.
    assert h.backend.generate_executor_id("p-1") == 3
    h.run()
    assert {p["metadata"]["name"]: p["metadata"]["labels"]["spark-exec-id"] for p in h.executor_pods()}[
        "p-1"
    ] == "3"
    h.backend.stop()


def test_the_direct_allocator_gives_no_ids_on_request() -> None:
    h = make_harness({}, driver=True)
    with pytest.raises(ValueError, match="direct allocator creates no EXECID pods"):
        h.backend.generate_executor_id("p")
