"""The backend with the statefulset and deployment allocators, on the in-memory API (which has no
controllers): the owner object is made at start, the application fails naming the fix when no
controller observes it, stop deletes it, and (until the bridge answers GenerateExecID) a driver is
refused."""

from __future__ import annotations

import pytest
from backend_harness import make_harness

from k8s_backend.allocation.owner_objects import OwnerKind
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import NotFoundError


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
def test_a_driver_is_refused_until_the_bridge_answers_generate_exec_id(kind: OwnerKind) -> None:
    with pytest.raises(ConfigError, match="GenerateExecID") as error:
        make_harness(conf(kind), driver=True)
    assert error.value.key == "spark.kubernetes.allocation.pods.allocator"
