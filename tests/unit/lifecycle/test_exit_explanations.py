"""How an ended executor is explained: exit codes, the loss message and its one-line headline."""

from __future__ import annotations

import pytest
from lifecycle_fixtures import SPARK_CONTAINER, failed_pod, pod, running, terminated

from k8s_backend.lifecycle import explain


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "0 (success)"),
        (1, "1 (generic, look at logs to clarify)"),
        (42, "42 (Douglas Adams fan)"),
        (10, "10 (Uncaught exception)"),
        (50, "50 (Uncaught exception)"),
        (52, "52 (JVM OOM)"),
        (53, "53 (DiskStore failed to create temp dir)"),
        (126, "126 (not executable - possibly perm or arch)"),
        (137, "137 (SIGKILL, possible container OOM)"),
        (139, "139 (SIGSEGV: that's unexpected)"),
        (255, "255 (exit-1, your guess is as good as mine)"),
        (7, "7 (unexpected)"),
        (-1, "-1 (unexpected)"),
    ],
)
def test_describe_exit_code(code: int, text: str) -> None:
    assert explain.describe_exit_code(code) == text


def test_exit_message_follows_sparks_template_with_every_container() -> None:
    message = explain.exit_message(failed_pod(1), 1, 1, SPARK_CONTAINER)
    expected_tail = (
        "The executor with id 1 exited with exit code 1 (generic, look at logs to clarify).\n"
        "The API gave the following brief reason: Error\n"
        "The API gave the following message: Executor failed.\n"
        "\n"
        "The API gave the following container statuses:\n"
        "\n"
        "\t container name: spark-kubernetes-executor\n"
        "\t container image: spark:4.3.0\n"
        "\t container state: terminated\n"
        "\t container started at: 2026-01-01T00:00:00Z\n"
        "\t container finished at: 2026-01-01T00:01:00Z\n"
        "\t exit code: 1\n"
        "\t termination reason: Error\n"
        "\n"
        "\t container name: sidecar\n"
        "\t container image: spark:4.3.0\n"
        "\t container state: terminated\n"
        "\t container started at: 2026-01-01T00:00:00Z\n"
        "\t container finished at: 2026-01-01T00:01:00Z\n"
        "\t exit code: 1\n"
        "\t termination reason: Error\n"
    )
    headline, rest = message.split("\n", 1)
    assert headline == "The executor with id 1 exited with code 1 (generic, look at logs to clarify)."
    assert rest == expected_tail


def test_exit_message_leaves_missing_reason_and_message_empty() -> None:
    message = explain.exit_message(pod(2, "Failed"), 2, -1, SPARK_CONTAINER)
    assert "The API gave the following brief reason: \n" in message
    assert "The API gave the following message: \n" in message


def test_container_descriptions_cover_running_waiting_and_unknown_states() -> None:
    waiting = {"name": "init", "image": "busybox", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
    unknown = {"name": "odd", "image": "x", "state": {}}
    message = explain.exit_message(
        pod(3, "Failed", containers=[running("sidecar"), waiting, unknown]), 3, -1, SPARK_CONTAINER
    )
    assert "\t container state: running\n\t container started at: 2026-01-01T00:00:00Z" in message
    assert "\t container state: waiting\n\t pending reason: ImagePullBackOff" in message
    assert "\t container name: odd\n\t container image: x\n\t container state: N/A" in message


def test_exit_code_comes_from_the_spark_container_not_a_sidecar() -> None:
    # Spark took the first terminated container: a sidecar that exited 0 hid the executor's crash.
    obj = pod(1, "Failed", containers=[terminated("sidecar", 0), terminated(SPARK_CONTAINER, 137)])
    assert explain.exit_code_of(obj, SPARK_CONTAINER) == 137


def test_exit_code_falls_back_to_another_container_when_the_spark_one_has_none() -> None:
    obj = pod(1, "Failed", containers=[running(SPARK_CONTAINER), terminated("sidecar", 3)])
    assert explain.exit_code_of(obj, SPARK_CONTAINER) == 3


def test_exit_code_is_unknown_without_a_terminated_container() -> None:
    still_running = pod(1, "Failed", containers=[running(SPARK_CONTAINER)])
    assert explain.exit_code_of(still_running, SPARK_CONTAINER) == -1
    assert explain.exit_code_of(pod(1, "Failed"), SPARK_CONTAINER) == explain.UNKNOWN_EXIT_CODE


def test_oom_killed_headline_names_the_memory_limit_and_the_fix() -> None:
    obj = pod(
        1,
        "Failed",
        containers=[terminated(SPARK_CONTAINER, 137, reason="OOMKilled")],
        memory_limit="4505Mi",
    )
    line = explain.headline(obj, 1, 137, SPARK_CONTAINER)
    assert "OOMKilled" in line
    assert "4505Mi" in line
    assert "spark.executor.memoryOverhead" in line
    assert explain.exit_message(obj, 1, 137, SPARK_CONTAINER).startswith(line)


def test_oom_killed_headline_without_a_limit() -> None:
    obj = pod(1, "Failed", containers=[terminated(SPARK_CONTAINER, 137, reason="OOMKilled")])
    line = explain.headline(obj, 1, 137, SPARK_CONTAINER)
    assert line.startswith("OOMKilled: the executor exceeded its memory limit;")


def test_an_evicted_pod_is_explained_by_the_kubelets_message() -> None:
    obj = pod(1, "Failed")
    obj["status"].update(reason="Evicted", message="The node was low on resource: memory. ")
    line = explain.headline(obj, 1, explain.UNKNOWN_EXIT_CODE, SPARK_CONTAINER)
    assert line == "Evicted by the kubelet: The node was low on resource: memory"
    assert "(unexpected)" not in line
    assert explain.exit_message(obj, 1, -1, SPARK_CONTAINER).startswith(line + ".\n")


def test_sigkill_and_jvm_oom_headlines() -> None:
    obj = pod(1, "Failed", containers=[terminated(SPARK_CONTAINER, 137)])
    assert "SIGKILL" in explain.headline(obj, 1, 137, SPARK_CONTAINER)
    assert "ran out of heap" in explain.headline(obj, 1, 52, SPARK_CONTAINER)


def test_deleted_message() -> None:
    assert explain.deleted_message(4) == "The executor with id 4 was deleted by a user or the framework."


def test_missing_message_is_sparks() -> None:
    assert explain.missing_message(1, 7, 30008, 30000) == (
        "The executor with ID 1 (registered at 7 ms) was not found in the cluster at the polling time "
        "(30008 ms) which is after the accepted detect delta time (30000 ms) configured by "
        "`spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the "
        "driver missed the deletion event. Marking this executor as failed."
    )
