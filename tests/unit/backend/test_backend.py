"""The backend on the fake API: Spark's KubernetesClusterSchedulerBackendSuite, ported."""

from __future__ import annotations

import pytest
from backend_harness import APP_ID, DRIVER_URL, Harness, make_harness

from k8s_backend import BackendStateError, ConfigError, KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, PVCS, SERVICES


def _created(h: Harness, resource: object) -> list[str]:
    return [c.body["metadata"]["name"] for c in h.fake.calls_of("create", resource)]  # type: ignore[arg-type]


def test_start_creates_the_config_map_before_requesting_executors(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    verbs = [(c.verb, c.resource_plural) for c in harness.fake.calls if c.verb == "create"]
    # A client-mode driver's heartbeat Lease first: every executor names it, and it owns the ConfigMap
    # (as a driver pod does in cluster mode); then the ConfigMap, then the executors.
    assert verbs == [("create", "leases"), ("create", "configmaps")] + [("create", "pods")] * 3
    config_map = harness.fake.objects(CONFIG_MAPS, "default")[0]
    assert config_map["metadata"]["labels"]["spark-app-selector"] == APP_ID
    lease = harness.fake.objects(LEASES, "default")[0]
    assert [o["uid"] for o in config_map["metadata"]["ownerReferences"]] == [lease["metadata"]["uid"]]


def test_start_requests_the_initial_executors_and_starts_both_sources(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    assert len(harness.executor_pods()) == 3
    assert harness.fake.calls_of("watch", PODS), "the watch source must be started"
    polls_before = harness.backend.polling_source.polls
    harness.run(30.0)
    assert harness.backend.polling_source.polls > polls_before, "the polling source must poll"
    assert harness.backend.state is BackendState.RUNNING


def test_disabled_watch_and_polling_make_no_pod_reads() -> None:
    h = make_harness(
        {
            "spark.kubernetes.executor.enableApiWatcher": "false",
            "spark.kubernetes.executor.enableApiPolling": "false",
        }
    )
    h.backend.start()
    h.run(60.0)
    assert not h.fake.calls_of("watch", PODS)
    # Only recovery's one list at start, never a resync.
    assert len(h.fake.calls_of("list", PODS)) == 1
    h.backend.stop()


def test_stop_deletes_executors_and_config_maps_but_no_services_or_pvcs_in_client_mode(
    harness: Harness,
) -> None:
    harness.backend.start()
    harness.run()
    harness.backend.stop()
    assert harness.executor_pods() == []
    assert harness.fake.objects(CONFIG_MAPS, "default") == []  # collected with the Lease that owns it
    assert harness.fake.objects(LEASES, "default") == []
    # A client-mode driver has no driver service, and its executors made no claims.
    assert not harness.fake.calls_of("delete_collection", SERVICES)
    assert not harness.fake.calls_of("delete_collection", PVCS)
    assert harness.backend.state is BackendState.STOPPED


def test_stop_deletes_services_and_pvcs_of_a_driver_pod() -> None:
    h = make_harness({"spark.kubernetes.driver.pod.name": "driver"}, driver_pod=True)
    h.backend.start()
    h.run()
    h.backend.stop()
    assert h.executor_pods() == []
    assert h.fake.objects(CONFIG_MAPS, "default") == []
    assert h.fake.calls_of("delete_collection", SERVICES)
    assert h.fake.calls_of("delete_collection", PVCS)


def test_stop_is_idempotent_and_needs_no_start() -> None:
    h = make_harness()
    h.backend.stop()
    h.backend.stop()
    assert h.backend.state is BackendState.STOPPED


def test_stop_keeps_pods_when_delete_on_termination_is_false() -> None:
    h = make_harness({"spark.kubernetes.executor.deleteOnTermination": "false"})
    h.backend.start()
    h.run()
    h.backend.stop()
    assert len(h.executor_pods()) == 3


def test_stop_sequence_continues_when_a_step_fails(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    harness.fake.fail_next("delete_collection", SERVICES, status=500, count=10)
    harness.backend.stop()
    assert harness.executor_pods() == [], "a failing service delete must not skip the executor deletes"
    assert harness.backend.state is BackendState.STOPPED


def test_hooks_in_a_wrong_state_raise_a_clear_error(harness: Harness) -> None:
    with pytest.raises(BackendStateError, match="request_total_executors.*new"):
        harness.backend.request_total_executors({0: 2})
    harness.backend.start()
    with pytest.raises(BackendStateError, match="start"):
        harness.backend.start()
    harness.backend.stop()
    with pytest.raises(BackendStateError, match="stopped"):
        harness.backend.kill_executors(["1"])


def test_a_failed_executor_is_reported_to_the_driver_with_its_exit_code(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    pod = harness.executor_pods()[0]
    executor_id = pod["metadata"]["labels"]["spark-exec-id"]
    harness.set_phase(pod["metadata"]["name"], "Failed", exit_code=1)
    harness.run(1.0)
    removed = [(i, loss) for i, loss in harness.driver.removed if i == executor_id]
    assert len(removed) == 1
    assert removed[0][1].exit_code == 1
    assert removed[0][1].exit_caused_by_app


def test_a_lost_executor_is_replaced_without_the_driver_asking(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    for pod in harness.executor_pods():
        harness.set_phase(pod["metadata"]["name"], "Running")
    harness.run(1.0)
    victim = harness.executor_pods()[0]["metadata"]["name"]
    harness.set_phase(victim, "Failed", exit_code=137)
    harness.run(2.0)
    names = {p["metadata"]["name"] for p in harness.executor_pods()}
    assert victim not in names
    assert len(names) == 3


def test_kill_removes_at_once_and_force_deletes_only_after_the_grace_period(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    pods = harness.executor_pods()
    for pod in pods:
        harness.set_phase(pod["metadata"]["name"], "Running")
    harness.run(1.0)
    victim = pods[0]["metadata"]["labels"]["spark-exec-id"]
    harness.backend.kill_executors([victim])
    harness.run()
    assert any(i == victim and loss.killed_by_driver for i, loss in harness.driver.removed)
    assert not harness.fake.calls_of("delete_collection", PODS)
    harness.run(5.0)
    assert harness.fake.calls_of("delete_collection", PODS)
    remaining = {p["metadata"]["labels"]["spark-exec-id"] for p in harness.executor_pods()}
    assert victim not in remaining


def test_kill_does_not_force_delete_pods_that_stopped_by_themselves(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    pod = harness.executor_pods()[0]
    harness.backend.kill_executors([pod["metadata"]["labels"]["spark-exec-id"]])
    harness.run(5.0)  # the pod never ran: nothing is Running, so no forced delete
    assert not harness.fake.calls_of("delete_collection", PODS)


def test_kill_labels_decommissioning_pods_when_a_label_is_configured() -> None:
    h = make_harness(
        {
            "spark.kubernetes.executor.decommissionLabel": "spark-decom",
            "spark.kubernetes.executor.decommissionLabelValue": "yes",
        }
    )
    h.backend.start()
    h.run()
    pod = h.executor_pods()[0]
    h.backend.kill_executors([pod["metadata"]["labels"]["spark-exec-id"]])
    h.run()
    labelled = h.fake.get(PODS, "default", pod["metadata"]["name"])
    assert labelled["metadata"]["labels"]["spark-decom"] == "yes"
    h.backend.stop()


def test_decommission_without_a_label_makes_no_pod_edits(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    harness.backend.decommission_executors(["1"])
    harness.run()
    assert not harness.fake.calls_of("patch", PODS)


def test_sufficient_resources_follows_the_min_registered_ratio(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    assert not harness.backend.sufficient_resources_registered()
    harness.driver.registered.update({"1": 0.0, "2": 0.0})  # 2 >= 3 * 0.8 is false
    assert not harness.backend.sufficient_resources_registered()
    harness.driver.registered["3"] = 0.0
    assert harness.backend.sufficient_resources_registered()


def test_is_executor_excluded_only_for_ids_the_allocator_deleted(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    assert not harness.backend.is_executor_excluded("1")
    assert not harness.backend.is_executor_excluded("driver")


def test_too_many_executor_failures_fail_the_application() -> None:
    h = make_harness({"spark.executor.maxNumFailures": "2"})
    h.backend.start()
    h.run()
    for _ in range(4):
        for pod in h.executor_pods():
            h.set_phase(pod["metadata"]["name"], "Failed", exit_code=1)
        h.run(2.0)
    assert h.backend.state is BackendState.FAILED
    assert h.driver.failures and "spark.executor.maxNumFailures" in h.driver.failures[0]
    h.backend.stop()
    assert h.executor_pods() == []


def test_bad_configuration_fails_before_any_api_call() -> None:
    from k8s_backend.testing import FakeKubernetes

    fake = FakeKubernetes()
    with pytest.raises(ConfigError, match="spark.executor.memory"):
        KubernetesClusterSchedulerBackend.create(
            {"spark.kubernetes.container.image": "x", "spark.executor.memory": "lots"},
            app_id=APP_ID,
            driver_url=DRIVER_URL,
            api=fake,
        )
    assert fake.calls == []


def test_missing_driver_pod_is_a_clear_error() -> None:
    from k8s_backend.testing import FakeKubernetes

    with pytest.raises(ConfigError, match="No pod was found named ghost"):
        KubernetesClusterSchedulerBackend.create(
            {"spark.kubernetes.container.image": "x", "spark.kubernetes.driver.pod.name": "ghost"},
            app_id=APP_ID,
            driver_url=DRIVER_URL,
            api=FakeKubernetes(),
        )


def test_status_summarises_state_targets_pods_and_losses(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    pod = harness.executor_pods()[0]
    harness.set_phase(pod["metadata"]["name"], "Failed", exit_code=52)
    harness.run(1.0)
    status = harness.backend.status()
    assert status["state"] == "running"
    assert status["app_id"] == APP_ID
    assert status["recent_losses"][0]["exit_code"] == 52
    assert "heap" in status["recent_losses"][0]["reason"]
    assert status["watch"]["alive"]


def test_a_410_reaches_the_allocator_before_the_next_poll(harness: Harness) -> None:
    harness.backend.start()
    harness.run()
    for pod in harness.executor_pods():
        harness.set_phase(pod["metadata"]["name"], "Running")
    harness.run(1.0)
    # The pod vanishes while the watch's version is compacted away: only a re-list can tell.
    harness.fake.compact()
    victim = harness.executor_pods()[0]["metadata"]["name"]
    harness.fake.delete(PODS, "default", victim)
    harness.fake.compact()
    harness.fake.drop_watches()
    harness.run(1.5)  # far less than the 30 s polling interval
    names = {p["metadata"]["name"] for p in harness.executor_pods()}
    assert victim not in names and len(names) == 3
