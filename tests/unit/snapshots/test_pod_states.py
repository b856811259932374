"""PodStateRules: Spark's ExecutorPodsSnapshot.toState mapping, rule by rule (ExecutorPodsSnapshotSuite)."""

from __future__ import annotations

import logging

import pytest
from snapshot_pods import SIDECAR, executor_pod, running_container, terminated_container

from k8s_backend.snapshots.states import ExecutorPodState, PodPhase, PodStateRules, executor_id_of

RULES = PodStateRules()
CHECK_ALL = PodStateRules(check_all_containers=True)


def phase(pod: dict[str, object], rules: PodStateRules = RULES) -> PodPhase:
    state = rules.to_state(pod)
    assert state is not None
    return state.phase


# ------------------------------------------------------------------------------------------ plain phases


@pytest.mark.parametrize(
    ("pod_phase", "expected"),
    [
        ("Pending", PodPhase.PENDING),
        ("Running", PodPhase.RUNNING),
        ("Succeeded", PodPhase.SUCCEEDED),
        ("Failed", PodPhase.FAILED),
        ("Terminating", PodPhase.TERMINATING),
    ],
)
def test_each_phase_maps_to_its_state(pod_phase: str, expected: PodPhase) -> None:
    assert phase(executor_pod(1, pod_phase)) is expected


def test_phase_matching_ignores_case() -> None:
    assert phase(executor_pod(1, "FAILED")) is PodPhase.FAILED
    assert phase(executor_pod(1, "pending")) is PodPhase.PENDING


def test_unknown_phase_maps_to_unknown_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.snapshots.states"):
        assert phase(executor_pod(7, "Unknown")) is PodPhase.UNKNOWN
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and "unknown phase" in warnings[0].getMessage()
    assert "spark-app-id-exec-7" in warnings[0].getMessage()


def test_missing_status_is_unknown() -> None:
    pod = executor_pod(1, None)
    del pod["status"]
    assert phase(pod) is PodPhase.UNKNOWN


# --------------------------------------------------------------------------------------------- deletion


@pytest.mark.parametrize("pod_phase", ["Pending", "Succeeded", "Failed", "Unknown", None])
def test_deletion_timestamp_on_a_non_running_pod_means_deleted(pod_phase: str | None) -> None:
    assert phase(executor_pod(1, pod_phase, deleted=True)) is PodPhase.DELETED


def test_deletion_timestamp_without_status_means_deleted() -> None:
    pod = executor_pod(1, None, deleted=True)
    del pod["status"]
    assert phase(pod) is PodPhase.DELETED


def test_running_pod_with_deletion_timestamp_is_still_running() -> None:
    # SPARK-31125: a pod being deleted keeps running (and may finish its tasks) until it stops.
    assert phase(executor_pod(1, "Running", deleted=True)) is PodPhase.RUNNING


def test_terminating_pod_with_deletion_timestamp_is_terminating() -> None:
    assert phase(executor_pod(1, "Terminating", deleted=True)) is PodPhase.TERMINATING


# ------------------------------------------------------------------------------ the Spark container decides


def test_running_pod_without_container_statuses_is_running() -> None:
    assert phase(executor_pod(1, "Running", containers=[])) is PodPhase.RUNNING


@pytest.mark.parametrize(("exit_code", "expected"), [(0, PodPhase.SUCCEEDED), (1, PodPhase.FAILED)])
def test_finished_executor_with_a_running_sidecar(exit_code: int, expected: PodPhase) -> None:
    # SPARK-33874: the pod stays Running because of the sidecar; the executor container's exit decides.
    containers = [terminated_container(exit_code=exit_code), running_container(SIDECAR)]
    pod = executor_pod(1, "Running", containers=containers)
    assert phase(pod) is expected


@pytest.mark.parametrize("sidecar_exit", [0, 1])
def test_sidecar_that_exited_while_the_executor_runs_leaves_it_running(sidecar_exit: int) -> None:
    pod = executor_pod(
        1, "Running", containers=[terminated_container(SIDECAR, sidecar_exit), running_container()]
    )
    assert phase(pod) is PodPhase.RUNNING


def test_the_configured_container_name_is_the_one_that_decides() -> None:
    pod = executor_pod(
        1, "Running", containers=[running_container(), terminated_container("custom-exec", exit_code=3)]
    )
    assert phase(pod) is PodPhase.RUNNING
    assert phase(pod, PodStateRules(container_name="custom-exec")) is PodPhase.FAILED


# --------------------------------------------------------------------------- checkAllContainers (SPARK-30821)


def sidecar_failed_pod(restart_policy: str = "Never", sidecar_exit: int = 1) -> dict[str, object]:
    return executor_pod(
        1,
        "Running",
        restart_policy=restart_policy,
        containers=[running_container(), terminated_container(SIDECAR, sidecar_exit)],
    )


def test_check_all_containers_fails_a_running_pod_with_any_failed_container() -> None:
    assert phase(sidecar_failed_pod(), CHECK_ALL) is PodPhase.FAILED


def test_without_check_all_containers_a_failed_sidecar_is_ignored() -> None:
    assert phase(sidecar_failed_pod(), RULES) is PodPhase.RUNNING


def test_check_all_containers_ignores_restart_policy_always() -> None:
    # With restartPolicy Always the kubelet restarts the failed container; the pod is not done.
    assert phase(sidecar_failed_pod(restart_policy="Always"), CHECK_ALL) is PodPhase.RUNNING


def test_check_all_containers_ignores_containers_that_exited_zero() -> None:
    assert phase(sidecar_failed_pod(sidecar_exit=0), CHECK_ALL) is PodPhase.RUNNING


# -------------------------------------------------------------------------------------- which pods count


def test_pod_without_executor_id_label_is_ignored() -> None:
    assert RULES.to_state(executor_pod(None)) is None


def test_statefulset_placeholder_id_is_ignored() -> None:
    assert RULES.to_state(executor_pod("EXECID")) is None


def test_non_numeric_executor_id_is_ignored() -> None:
    assert executor_id_of(executor_pod("abc")) is None


def test_pod_without_metadata_is_ignored() -> None:
    assert RULES.to_state({"status": {"phase": "Running"}}) is None


def test_to_state_carries_id_phase_and_pod() -> None:
    pod = executor_pod(42, "Pending", rv=17)
    state = RULES.to_state(pod)
    assert state is not None
    assert (state.executor_id, state.phase) == (42, PodPhase.PENDING)
    assert state.pod is pod
    assert state.name == "spark-app-id-exec-42"
    assert state.resource_version == 17


# --------------------------------------------------------------------------------------- state accessors


def test_state_accessors() -> None:
    pod = executor_pod(
        3,
        "Running",
        deleted=True,
        labels={"spark-exec-inactive": "true", "spark-exec-resourceprofile-id": "2"},
    )
    state = ExecutorPodState(3, PodPhase.RUNNING, pod)
    assert state.is_inactive
    assert state.is_being_deleted
    assert state.resource_profile_id == 2
    assert state.creation_timestamp == pytest.approx(1767225600.0)  # 2026-01-01T00:00:00Z


def test_state_accessors_tolerate_missing_or_bad_fields() -> None:
    pod = executor_pod(3, "Running", labels={"spark-exec-resourceprofile-id": "x"})
    pod["metadata"]["creationTimestamp"] = "not a time"
    pod["metadata"]["resourceVersion"] = "opaque"
    state = ExecutorPodState(3, PodPhase.RUNNING, pod)
    assert state.resource_profile_id == 0
    assert state.creation_timestamp is None
    assert state.resource_version is None
    assert not state.is_inactive
    assert not state.is_being_deleted


def test_state_equality_ignores_the_pod_body() -> None:
    assert ExecutorPodState(1, PodPhase.RUNNING, executor_pod(1, rv=1)) == ExecutorPodState(
        1, PodPhase.RUNNING, executor_pod(1, rv=2)
    )
    assert ExecutorPodState(1, PodPhase.RUNNING, {}) != ExecutorPodState(1, PodPhase.FAILED, {})


def test_final_phases() -> None:
    final = {p for p in PodPhase if p.is_final}
    assert final == {PodPhase.SUCCEEDED, PodPhase.FAILED, PodPhase.DELETED, PodPhase.TERMINATING}
