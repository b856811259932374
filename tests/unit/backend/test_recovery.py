"""Recovery after a driver restart: adopt what still matches, delete the rest, never reuse an id."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from backend_harness import APP_ID, DRIVER_URL, Harness, make_harness

from k8s_backend.backend.recovery import RecoveryPlan, matches, plan_recovery, recover
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import PODS, Obj
from k8s_backend.snapshots.states import PodStateRules
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes

SPARK = "spark-kubernetes-executor"
IMAGE = "spark:4.3.0"
RULES = PodStateRules(SPARK)
OTHER_DRIVER = "spark://CoarseGrainedScheduler@old-driver:7078"


def old_pod(
    executor_id: int,
    phase: str = "Running",
    *,
    driver_url: str = DRIVER_URL,
    image: str = IMAGE,
    exit_code: int | None = None,
    app_id: str = APP_ID,
    deleting: bool = False,
) -> Obj:
    """An executor pod as an earlier driver of the application left it."""
    container: dict[str, Any] = {
        "name": SPARK,
        "image": image,
        "env": [
            {"name": "SPARK_EXECUTOR_ID", "value": str(executor_id)},
            {"name": "SPARK_DRIVER_URL", "value": driver_url},
        ],
    }
    state: dict[str, Any] = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
    metadata: dict[str, Any] = {
        "name": f"earlier-exec-{executor_id}",
        "namespace": "default",
        "labels": {
            "spark-app-selector": app_id,
            "spark-role": "executor",
            "spark-exec-id": str(executor_id),
            "spark-exec-resourceprofile-id": "0",
        },
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": "Never", "containers": [container]},
        "status": {"phase": phase, "containerStatuses": [{"name": SPARK, "state": state}]},
    }


def plan(pods: list[Obj], policy: str = "adopt", image: str | None = IMAGE) -> RecoveryPlan:
    return plan_recovery(pods, policy=policy, driver_url=DRIVER_URL, image=image, rules=RULES)


def adopted_ids(result: RecoveryPlan) -> list[str]:
    return [p["metadata"]["labels"]["spark-exec-id"] for p in result.adopt]


# -- the plan -------------------------------------------------------------------------------------


def test_matching_live_pods_are_adopted() -> None:
    result = plan([old_pod(1), old_pod(2, "Pending")])
    assert adopted_ids(result) == ["1", "2"]
    assert result.delete_live == () and result.delete_finished == ()
    assert result.next_executor_id == 3


def test_live_pods_of_another_driver_or_image_are_deleted() -> None:
    result = plan([old_pod(1, driver_url=OTHER_DRIVER), old_pod(2, image="spark:3.5.0"), old_pod(3)])
    assert adopted_ids(result) == ["3"]
    assert result.delete_live == ("earlier-exec-1", "earlier-exec-2")


def test_finished_pods_are_deleted_and_their_ids_counted() -> None:
    result = plan([old_pod(1), old_pod(7, "Failed", exit_code=1), old_pod(4, "Succeeded", exit_code=0)])
    assert result.delete_finished == ("earlier-exec-7", "earlier-exec-4")
    assert result.next_executor_id == 8


def test_a_pod_in_an_unknown_phase_is_treated_as_finished() -> None:
    result = plan([old_pod(2, "Unknown")])
    assert result.delete_finished == ("earlier-exec-2",) and result.adopt == ()


def test_pods_already_being_deleted_are_left_alone_but_their_ids_count() -> None:
    result = plan([old_pod(9, "Failed", exit_code=1, deleting=True), old_pod(1)])
    assert adopted_ids(result) == ["1"]
    assert result.delete_finished == () and result.delete_live == ()
    assert result.next_executor_id == 10


def test_the_delete_policy_deletes_every_live_pod() -> None:
    result = plan([old_pod(1), old_pod(2, "Pending"), old_pod(3, "Failed", exit_code=1)], policy="delete")
    assert result.adopt == ()
    assert result.delete_live == ("earlier-exec-1", "earlier-exec-2")
    assert result.delete_finished == ("earlier-exec-3",)
    assert result.next_executor_id == 4


def test_pods_without_an_executor_id_are_ignored() -> None:
    unresolved = old_pod(5)
    unresolved["metadata"]["labels"]["spark-exec-id"] = "EXECID"
    result = plan([unresolved])
    assert result == RecoveryPlan()
    assert result.next_executor_id == 1


def test_without_a_configured_image_any_image_matches() -> None:
    assert matches(old_pod(1, image="anything:1"), driver_url=DRIVER_URL, image=None, container_name=SPARK)
    assert not matches(old_pod(1), driver_url=OTHER_DRIVER, image=None, container_name=SPARK)
    assert not matches(old_pod(1), driver_url=DRIVER_URL, image=None, container_name="other")


# -- recover() on the fake ------------------------------------------------------------------------


def recover_on(
    fake: FakeKubernetes, policy: str = "adopt", delete_finished: bool = True
) -> tuple[Any, Any, Any]:
    clock = ManualClock(1_700_000_000.0)
    store = ExecutorPodsSnapshotsStore(DeterministicScheduler(clock), clock, RULES)
    found, report = recover(
        fake,
        store,
        namespace="default",
        app_id=APP_ID,
        policy=policy,
        driver_url=DRIVER_URL,
        image=IMAGE,
        rules=RULES,
        delete_finished=delete_finished,
    )
    return found, report, store


def seeded_fake(*pods: Obj) -> FakeKubernetes:
    fake = FakeKubernetes(watch_blocking=False)
    for pod in pods:
        created = fake.create(PODS, "default", {k: v for k, v in pod.items() if k != "status"})
        fake.patch_status(PODS, "default", created["metadata"]["name"], pod["status"])
    return fake


def names_in(fake: FakeKubernetes) -> list[str]:
    return sorted(p["metadata"]["name"] for p in fake.objects(PODS, "default"))


def test_recover_deletes_adopts_and_seeds_the_store() -> None:
    fake = seeded_fake(old_pod(1), old_pod(2, driver_url=OTHER_DRIVER), old_pod(3, "Failed", exit_code=1))
    _, report, store = recover_on(fake)
    assert names_in(fake) == ["earlier-exec-1"]
    assert (report.adopted, report.deleted, report.next_executor_id) == (1, 2, 4)
    assert sorted(store.current().pods) == [1]


def test_recover_only_touches_this_applications_executors() -> None:
    other_app = old_pod(1, driver_url=OTHER_DRIVER, app_id="another-app")
    fake = seeded_fake(other_app, old_pod(2, driver_url=OTHER_DRIVER))
    recover_on(fake)
    assert names_in(fake) == ["earlier-exec-1"]
    selectors = [c.label_selector for c in fake.calls_of("list", PODS)]
    assert selectors == [f"spark-app-selector={APP_ID},spark-role=executor"], "inactive pods included"


def test_finished_pods_are_kept_when_pods_are_not_deleted_on_termination() -> None:
    fake = seeded_fake(old_pod(3, "Failed", exit_code=1))
    _, report, _ = recover_on(fake, delete_finished=False)
    assert names_in(fake) == ["earlier-exec-3"]
    assert report.deleted == 0 and report.next_executor_id == 4


def test_a_pod_gone_before_its_delete_is_fine_and_other_errors_are_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = seeded_fake(old_pod(1, driver_url=OTHER_DRIVER), old_pod(2, driver_url=OTHER_DRIVER))
    fake.fail_next("delete", PODS, status=404)
    fake.fail_next("delete", PODS, status=500)
    with caplog.at_level(logging.WARNING, logger="k8s_backend.backend.recovery"):
        _, report, _ = recover_on(fake)
    assert report.failed_deletes == ("earlier-exec-2",)
    assert report.deleted == 1
    assert any("earlier-exec-2" in r.getMessage() for r in caplog.records)


# -- through the backend --------------------------------------------------------------------------


def prepared(*pods: Obj, conf: dict[str, str] | None = None) -> Harness:
    h = make_harness(conf)
    for pod in pods:
        h.fake.create(PODS, "default", {k: v for k, v in pod.items() if k != "status"})
        h.fake.patch_status(PODS, "default", pod["metadata"]["name"], pod["status"])
    h.fake.reset_calls()
    return h


def exec_ids(h: Harness) -> list[int]:
    return sorted(int(p["metadata"]["labels"]["spark-exec-id"]) for p in h.executor_pods())


def test_adopted_executors_count_toward_the_target_and_ids_continue_above_the_highest() -> None:
    h = prepared(
        old_pod(1),
        old_pod(2, driver_url=OTHER_DRIVER),
        old_pod(4, image="spark:3.5.0"),
        old_pod(5, "Failed", exit_code=1),
    )
    h.backend.start()
    h.run()
    h.run(1.0)
    assert exec_ids(h) == [1, 6, 7], "1 adopted, 2 / 4 / 5 deleted, two new from 6"
    created = [c.body["metadata"]["labels"]["spark-exec-id"] for c in h.fake.calls_of("create", PODS)]
    assert created == ["6", "7"], "no pod is created for an adopted executor"
    assert h.backend.status()["allocator"]["executor_id_counter"] == 7
    h.backend.stop()
    assert h.executor_pods() == [], "adopted pods are deleted at stop like the others"


def test_recovery_runs_before_any_allocation() -> None:
    h = prepared(old_pod(1, driver_url=OTHER_DRIVER), old_pod(2, "Succeeded", exit_code=0))
    h.backend.start()
    h.run()
    pod_calls = [(c.verb, c.name) for c in h.fake.calls if c.resource_plural == "pods" and c.verb != "watch"]
    first_create = next(i for i, (verb, _) in enumerate(pod_calls) if verb == "create")
    assert pod_calls[0] == ("list", None)
    assert sorted(pod_calls[1:first_create]) == [("delete", "earlier-exec-1"), ("delete", "earlier-exec-2")]
    assert all(verb == "create" or verb == "list" for verb, _ in pod_calls[first_create:])
    h.backend.stop()


def test_a_full_gang_of_adopted_executors_needs_no_new_pod() -> None:
    h = prepared(old_pod(3), old_pod(4), old_pod(5))
    h.backend.start()
    h.run()
    h.run(2.0)
    assert exec_ids(h) == [3, 4, 5]
    assert not h.fake.calls_of("create", PODS)
    h.backend.stop()


def test_the_delete_policy_starts_clean_and_still_never_reuses_an_id() -> None:
    h = prepared(old_pod(1), old_pod(8, "Pending"), conf={"spark.kubernetes.recovery.policy": "delete"})
    h.backend.start()
    h.run()
    assert exec_ids(h) == [9, 10, 11]
    h.backend.stop()


def test_no_executor_id_is_ever_reused_across_restarts() -> None:
    h = prepared(old_pod(2, "Failed", exit_code=1), old_pod(12, "Failed", exit_code=1, deleting=True))
    h.backend.start()
    h.run()
    assert exec_ids(h) == [13, 14, 15]
    h.backend.stop()


def test_a_first_start_creates_from_id_one() -> None:
    h = prepared()
    h.backend.start()
    h.run()
    assert exec_ids(h) == [1, 2, 3]
    h.backend.stop()


def test_adopted_executors_are_tracked() -> None:
    h = prepared(old_pod(1), old_pod(2))
    h.backend.start()
    h.run()
    h.run(1.0)
    histories = h.backend.status()["executors"]["histories"]
    assert {"1", "2"} <= set(histories)
    assert "running" in histories["1"]
    h.backend.stop()


def test_a_recovery_delete_that_fails_is_retried_until_the_old_executor_is_gone() -> None:
    h = prepared(old_pod(1, driver_url=OTHER_DRIVER))
    h.fake.fail_next("delete", PODS, status=500)  # one transient failure while recovering
    h.backend.start()
    h.run(1.0)
    assert 1 in exec_ids(h), "the first delete failed"
    h.run(10.0)
    ids = exec_ids(h)
    h.backend.stop()
    assert 1 not in ids
