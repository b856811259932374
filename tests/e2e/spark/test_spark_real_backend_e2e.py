"""The real backend behind a real PySpark driver, on the embedded local cluster (``pyk8s://local``).

Every scenario runs in a fresh Python process (its own driver JVM), see :mod:`real_backend_support`;
the test asserts on what that process observed: pods in the local cluster's API, executor processes in
/proc, and Spark's own status store. Few scenarios, each covering several requirements, because every
JVM start costs seconds on a small machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import real_backend_support
from real_backend_support import executor_processes, is_alive, session_processes, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SUPPORT = Path(real_backend_support.__file__)


def run_scenario(name: str, tmp_path: Path, expect_exit: int = 0) -> dict[str, Any]:
    """Run a scenario in a fresh Python process and return its observations."""
    out = tmp_path / f"{name}.json"
    command = [sys.executable, str(SUPPORT), name, str(out)]
    try:
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=500)
        exit_code, stderr = result.returncode, result.stderr
    except subprocess.TimeoutExpired as timeout:
        partial = timeout.stderr or b""  # bytes even in text mode
        exit_code, stderr = None, partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    observed: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    if exit_code != expect_exit:
        pytest.fail(
            f"scenario {name} exited {exit_code} (expected {expect_exit}; None: timed out)\n"
            f"observed: {json.dumps(observed, indent=1, default=str)[-4000:]}\n"
            f"stderr (tail):\n{stderr[-6000:]}"
        )
    return observed


def test_dynamic_allocation_an_executor_killed_mid_job_and_stop(tmp_path: Path) -> None:
    seen = run_scenario("dynamic", tmp_path)
    assert seen["backend"] == "KubernetesClusterSchedulerBackend"
    assert seen["master"] == "pyk8s://local"

    # Held tasks queue up: executor pods scale up to maxExecutors (3), never beyond, all running tasks.
    assert seen["scaled_up"], seen["pods_after_scale_up"]
    assert seen["all_busy"]
    assert seen["max_live_pods"] == 3
    executor_ids = {pod["executor_id"] for pod in seen["pods_after_scale_up"]}
    assert executor_ids == {"1", "2", "3"}
    # Each executor is a process the kubelet started for its pod.
    assert set(seen["processes_after_scale_up"]) == executor_ids
    assert sorted(seen["processes_after_scale_up"].values()) == seen["kubelet_pids"]

    # SIGKILL mid-job: the pod failed with 137, Spark got our reason with the exit code, a new pod came.
    victim = seen["victim"]
    killed_pod = next(pod for pod in seen["pods_after_kill"] if pod["executor_id"] == victim)
    assert (killed_pod["phase"], killed_pod["exit_code"]) == ("Failed", 137)
    assert seen["lost_seen"]
    reason = seen["removed_after_kill"][victim]
    assert "exit code 137" in reason
    assert "SIGKILL" in reason
    assert seen["replacement_created"], seen["pods_after_kill"]
    assert seen["replacement_running"], "the replacement executor's process never started"
    assert any(pod["executor_id"] == "4" for pod in seen["pods_after_kill"])

    # The lost task was retried and the answer is right.
    assert seen["job_result"] == {"sum": seen["expected_sum"]}
    assert seen["failed_task_attempts"] >= 1
    assert seen["completed_tasks"] == 12

    # Idle: released down to minExecutors (1), in pods and in Spark.
    assert seen["scaled_down"], seen["pods_after_idle"]
    assert seen["spark_saw_one"], seen["spark_executors_after_idle"]
    kept = [p for p in seen["pods_after_idle"] if p["phase"] == "Running" and not p["deleting"]]
    assert [pod["executor_id"] for pod in kept] == list(seen["spark_executors_after_idle"])
    released = [p for p in seen["pods_after_idle"] if p not in kept and p["executor_id"] != victim]
    assert len(released) == 2
    # Told to stop by Spark, a released executor exits 0 (or its pod is already being deleted).
    assert all(p["exit_code"] == 0 or p["deleting"] for p in released), seen["pods_after_idle"]
    assert seen["status"]["recent_losses"][0]["exit_code"] == 137

    # spark.stop(): the backend deleted every pod, no executor process is left, the cluster stopped.
    assert seen["pods_left"] == []
    assert all(pod["deleted"] for pod in seen["final_pods"])
    assert seen["executor_processes_after_stop"] == {}
    assert seen["session_processes_after_stop"] == []
    assert len(seen["sessions"]) >= 4
    assert seen["cluster_stopped"]
    assert executor_processes(seen["app_id"]) == {}


def test_a_driver_killed_with_sigkill_leaves_no_executor_processes(tmp_path: Path) -> None:
    seen = run_scenario("crash", tmp_path, expect_exit=-9)
    assert seen["answer"] == 4950
    executors = seen["executor_pids"]
    assert sorted(executors) == ["1", "2"]
    # Nothing in the driver ran to clean up: the kernel's parent-death signal takes the executors (and
    # their Python workers) down, and pyspark's JVM exits when its Python parent's pipe closes.
    assert wait_until(lambda: not executor_processes(seen["app_id"]), 60), executor_processes(seen["app_id"])
    assert wait_until(lambda: not session_processes(executors.values()), 60)
    assert wait_until(lambda: not is_alive(seen["driver_jvm_pid"]), 60)


def test_bad_configuration_fails_with_our_config_error_before_any_pod(tmp_path: Path) -> None:
    outcomes = run_scenario("bad-conf", tmp_path)["outcomes"]
    memory_message = "spark.executor.memory=lots is not a size"
    # Spark refuses this value at JVM launch (spark-submit) and in a running JVM's SparkContext, before
    # our backend is asked for: the user still gets our ConfigError, and no backend was created.
    for case in ("no_jvm_yet", "jvm_running"):
        outcome = outcomes[case]
        assert outcome.get("key") == "spark.executor.memory", outcome
        assert memory_message in outcome["error"]
        assert outcome["backend_calls"] == []
        assert not outcome["context_left"]
    assert not outcomes["no_jvm_yet"]["jvm_running"]
    # A value only our backend checks: it refuses while the local cluster holds no pod.
    outcome = outcomes["backend_only"]
    assert outcome.get("key") == "spark.kubernetes.allocation.batch.size", outcome
    assert "must be a positive integer" in outcome["error"]
    assert outcome["backend_calls"] == [{"pods": []}]
    assert not outcome["context_left"]


def test_only_a_bad_value_the_user_set_replaces_sparks_error() -> None:
    from k8s_backend.errors import ConfigError
    from k8s_backend.spark.session import raise_config_error

    launch_failure = RuntimeError("Java gateway process exited")
    with pytest.raises(ConfigError, match="spark.executor.memory=lots") as raised:
        raise_config_error({"spark.executor.memory": "lots"}, launch_failure)
    assert raised.value.__cause__ is launch_failure
    # A key the user did not set (the image may come from spark-defaults.conf) explains nothing.
    raise_config_error({"spark.executor.instances": "2"}, launch_failure)
