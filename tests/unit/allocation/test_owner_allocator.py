"""The statefulset/deployment allocator component against the in-memory API, the test playing the
controller (the in-memory API has none): owner objects created and scaled, EXECID pods given ids,
deletion costs set on the pods to remove, owners deleted at stop."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from k8s_backend.allocation.creator import PodSpecBuilder
from k8s_backend.allocation.owner_allocator import OwnerPodsAllocator, OwnerSettings
from k8s_backend.allocation.owner_objects import DELETION_COST_ANNOTATION, OwnerKind
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.common.failure_sink import FailureSink
from k8s_backend.conf.model import KubernetesConf, ResourceProfile
from k8s_backend.kube.port import PODS, NotFoundError, Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.testing import DeterministicScheduler, FakeKubernetes

APP = "spark-owner"
NS = "default"


def make(
    kind: OwnerKind, deletion_cost: int | None = None, failures: FailureSink | None = None, **settings: Any
) -> tuple[OwnerPodsAllocator, FakeKubernetes, DeterministicScheduler]:
    conf = KubernetesConf.from_spark_conf({"spark.kubernetes.container.image": "spark:4.3.0"})
    conf = attrs.evolve(conf, allocation=attrs.evolve(conf.allocation, allocator=kind.value))
    api, scheduler = FakeKubernetes(), DeterministicScheduler()
    allocator = OwnerPodsAllocator(
        OwnerSettings(kind, NS, conf.executor.default_profile, deletion_cost=deletion_cost, **settings),
        AllocatorIdentity(
            app_id=APP, driver_url="spark://CoarseGrainedScheduler@d:7078", pod_name_prefix="o"
        ),
        api,
        ExecutorPodBuilder(conf, None, facts=DriverFacts(spark_user="u", spark_version="4.3.0")),
        scheduler,
        scheduler.clock,
        failures=failures or FailureSink(),
    )
    return allocator, api, scheduler


def owner(api: FakeKubernetes, kind: OwnerKind, rp_id: int = 0) -> Obj:
    return api.get(kind.resource, NS, kind.object_name(APP, rp_id))


def controller_makes(api: FakeKubernetes, kind: OwnerKind, name: str, rp_id: int = 0) -> None:
    """What the StatefulSet/ReplicaSet controller does: a pod from the template."""
    template = owner(api, kind, rp_id)["spec"]["template"]
    metadata = {**template["metadata"], "name": name}
    api.create(PODS, NS, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]})


def ids(api: FakeKubernetes) -> dict[str, str]:
    pods = api.list(PODS, NS, label_selector=f"spark-app-selector={APP}").items
    return {p["metadata"]["name"]: p["metadata"]["labels"]["spark-exec-id"] for p in pods}


@pytest.mark.parametrize("kind", list(OwnerKind))
def test_targets_create_then_scale_one_owner_per_profile(kind: OwnerKind) -> None:
    allocator, api, scheduler = make(kind)
    allocator.start()
    allocator.register_resource_profile(ResourceProfile(id=1))
    allocator.set_total_expected_executors({0: 2, 1: 1})
    scheduler.run_until_idle()
    assert owner(api, kind)["spec"]["replicas"] == 2 and owner(api, kind, 1)["spec"]["replicas"] == 1
    allocator.set_total_expected_executors({0: 5, 1: 1})
    scheduler.run_until_idle()
    assert owner(api, kind)["spec"]["replicas"] == 5
    assert allocator.status()["replicas"] == {0: 5, 1: 1}
    allocator.stop()
    for rp_id in (0, 1):
        with pytest.raises(NotFoundError):
            owner(api, kind, rp_id)


def test_pods_waiting_for_an_id_get_consecutive_ids_that_never_repeat() -> None:
    kind = OwnerKind.STATEFUL_SET
    allocator, api, scheduler = make(kind)
    allocator.start()
    allocator.set_total_expected_executors({0: 2})
    scheduler.run_until_idle()
    controller_makes(api, kind, "s-0")
    controller_makes(api, kind, "s-1")
    scheduler.advance(1.0)
    assert sorted(ids(api).values()) == ["1", "2"]
    api.delete(PODS, NS, "s-1")
    controller_makes(api, kind, "s-1")  # the controller's replacement keeps the name, not the id
    scheduler.advance(1.0)
    assert ids(api)["s-1"] == "3"
    allocator.stop()


def test_a_restarted_allocator_takes_over_the_owner_and_continues_the_ids() -> None:
    kind = OwnerKind.DEPLOYMENT
    first, api, scheduler = make(kind)
    first.start()
    first.set_total_expected_executors({0: 1})
    scheduler.run_until_idle()
    controller_makes(api, kind, "d-a")
    scheduler.advance(1.0)
    settings = OwnerSettings(kind, NS, ResourceProfile(id=0))
    second = OwnerPodsAllocator(settings, first.identity, api, first.builder, scheduler, scheduler.clock)
    second.start()
    second.set_total_expected_executors({0: 2})
    scheduler.run_until_idle()
    assert owner(api, kind)["spec"]["replicas"] == 2
    controller_makes(api, kind, "d-b")
    scheduler.advance(1.0)
    assert ids(api) == {"d-a": "1", "d-b": "2"}


def test_a_deployment_marks_the_pods_to_remove_with_the_deletion_cost() -> None:
    kind = OwnerKind.DEPLOYMENT
    allocator, api, scheduler = make(kind, deletion_cost=-100)
    allocator.start()
    allocator.set_total_expected_executors({0: 3})
    scheduler.run_until_idle()
    for name in ("d-a", "d-b", "d-c"):
        controller_makes(api, kind, name)
    scheduler.advance(1.0)
    by_id = {v: k for k, v in ids(api).items()}
    # Spark lowers the target, then kills: the scale-down waits for the mark.
    allocator.set_total_expected_executors({0: 2})
    allocator.mark_for_removal([2])
    scheduler.run_until_idle()
    assert owner(api, kind)["spec"]["replicas"] == 3
    pods = api.list(PODS, NS).items
    costs = {p["metadata"]["name"]: p["metadata"]["annotations"][DELETION_COST_ANNOTATION] for p in pods}
    assert costs == {by_id["1"]: "0", by_id["2"]: "-100", by_id["3"]: "0"}
    scheduler.advance(1.0)
    assert owner(api, kind)["spec"]["replicas"] == 2


def test_a_statefulset_or_an_unset_cost_marks_nothing() -> None:
    for allocator, _api, scheduler in (
        make(OwnerKind.STATEFUL_SET, deletion_cost=-1),
        make(OwnerKind.DEPLOYMENT),
    ):
        allocator.mark_for_removal([1])
        assert scheduler.run_until_idle() == 0


@pytest.mark.parametrize("kind", list(OwnerKind))
def test_an_owner_no_controller_observes_fails_the_application_naming_the_fix(kind: OwnerKind) -> None:
    sink = FailureSink()
    allocator, _api, scheduler = make(kind, controller_timeout=10.0, failures=sink)
    allocator.start()
    allocator.set_total_expected_executors({0: 1})
    scheduler.advance(9.0)
    assert sink.reason is None and allocator.status()["unobserved"] == [0]
    scheduler.advance(2.0)
    assert sink.reason is not None
    assert "no controller observed" in sink.reason and "allocation.pods.allocator=direct" in sink.reason


def test_an_observed_owner_is_checked_no_more() -> None:
    kind = OwnerKind.STATEFUL_SET
    allocator, api, scheduler = make(kind, controller_timeout=10.0)
    allocator.start()
    allocator.set_total_expected_executors({0: 1})
    scheduler.run_until_idle()
    api.patch_status(kind.resource, NS, kind.object_name(APP, 0), {"observedGeneration": 1})  # the controller
    scheduler.advance(1.0)
    assert allocator.status()["unobserved"] == []


def test_with_a_driver_ids_come_from_generate_executor_id_and_label_the_pod() -> None:
    kind = OwnerKind.STATEFUL_SET
    allocator, api, scheduler = make(kind, name_executors=False)
    allocator.start()
    allocator.advance_executor_id_counter(5)
    allocator.set_total_expected_executors({0: 2})
    scheduler.run_until_idle()
    controller_makes(api, kind, "s-0")
    controller_makes(api, kind, "s-1")
    scheduler.advance(1.0)
    assert ids(api) == {"s-0": "EXECID", "s-1": "EXECID"}  # not named by the allocator itself
    assert allocator.generate_executor_id("s-1") == 5
    assert allocator.generate_executor_id("s-0") == 6
    scheduler.run_until_idle()
    assert ids(api) == {"s-0": "6", "s-1": "5"}


def test_halt_stops_all_changes_and_delete_owned_still_deletes() -> None:
    kind = OwnerKind.DEPLOYMENT
    allocator, api, scheduler = make(kind)
    allocator.start()
    allocator.set_total_expected_executors({0: 1})
    scheduler.run_until_idle()
    allocator.halt()
    allocator.set_total_expected_executors({0: 4})
    scheduler.run_until_idle()
    assert owner(api, kind)["spec"]["replicas"] == 1
    allocator.delete_owned()
    with pytest.raises(NotFoundError):
        owner(api, kind)


@pytest.mark.parametrize("verb", ["create", "patch"])
def test_a_refused_create_or_scale_is_tried_again_at_the_next_tick(verb: str) -> None:
    kind = OwnerKind.STATEFUL_SET
    allocator, api, scheduler = make(kind)
    allocator.start()
    if verb == "patch":
        allocator.set_total_expected_executors({0: 1})
    scheduler.run_until_idle()  # the first tick included
    api.fail_next(verb, kind.resource, status=500, count=1)
    allocator.set_total_expected_executors({0: 3})
    scheduler.run_until_idle()
    assert allocator.status()["replicas"] == ({} if verb == "create" else {0: 1})
    scheduler.advance(1.0)
    assert owner(api, kind)["spec"]["replicas"] == 3 and allocator.status()["replicas"] == {0: 3}


def test_a_refused_deployment_scale_down_is_deferred_again_and_applied() -> None:
    kind = OwnerKind.DEPLOYMENT
    allocator, api, scheduler = make(kind)
    allocator.start()
    allocator.set_total_expected_executors({0: 3})
    scheduler.run_until_idle()
    api.fail_next("patch", kind.resource, status=500, count=1)
    allocator.set_total_expected_executors({0: 1})
    scheduler.advance(1.0)  # the deferred scale-down is refused
    assert owner(api, kind)["spec"]["replicas"] == 3
    scheduler.advance(3.0)
    assert owner(api, kind)["spec"]["replicas"] == 1


class TemplateClaimBuilder:
    """A builder whose pod template mounts a claim (a pod template file can, whatever the keys say)."""

    def __init__(self, inner: PodSpecBuilder) -> None:
        self._inner = inner

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
        built = self._inner.build(request)
        volume = {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}
        built.pod["spec"].setdefault("volumes", []).append(volume)
        return built


def test_a_template_the_kind_cannot_carry_fails_the_application() -> None:
    kind = OwnerKind.DEPLOYMENT
    sink = FailureSink()
    template, api, scheduler = make(kind)
    allocator = OwnerPodsAllocator(
        OwnerSettings(kind, NS, ResourceProfile(id=0)), template.identity, api,
        TemplateClaimBuilder(template.builder), scheduler, scheduler.clock, failures=sink,
    )  # fmt: skip
    allocator.start()
    allocator.set_total_expected_executors({0: 1})
    scheduler.advance(2.0)
    assert sink.reason is not None and "not supported with the deployment allocator" in sink.reason
    with pytest.raises(NotFoundError):
        owner(api, kind)
