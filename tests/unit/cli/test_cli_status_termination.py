"""A failed cluster-mode driver says why: its container falls back to its log for the termination
message, and ``status`` shows the end of it."""

from __future__ import annotations

from pathlib import Path

from cli_support import cli

from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import PODS
from k8s_backend.testing import FakeKubernetes

APP = "spark-" + "9" * 32
M = ["--master", "pyk8s://https://k8s.test:6443"]


def test_the_driver_container_falls_back_to_its_log_on_error(tmp_path: Path) -> None:
    app = tmp_path / "main.py"
    app.write_text("print('x')\n")
    argv = ["--deploy-mode", "cluster", "--conf", "spark.kubernetes.container.image=spark:py", str(app)]
    sub = build_submission(parse_submit_args(["--master", "pyk8s://https://k:6443", *argv]), {})
    plan = plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k:6443", environ={})
    [container] = plan.pod["spec"]["containers"]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_status_shows_the_end_of_a_failed_drivers_termination_message() -> None:
    fake = FakeKubernetes()
    labels = {"spark-app-selector": APP, "spark-role": "driver", "spark-app-name": "pi"}
    container = {"name": "spark-kubernetes-driver", "image": "i"}
    pod = {"metadata": {"name": "pi-driver", "labels": labels}, "spec": {"containers": [container]}}
    fake.create(PODS, "default", pod)
    tail = "\n".join([*(f"log line {i}" for i in range(30)), "ModuleNotFoundError: No module named 'numpy'"])
    ended = {"exitCode": 1, "reason": "Error", "message": tail}
    status = {"name": "spark-kubernetes-driver", "state": {"terminated": ended}}
    fake.patch_status(PODS, "default", "pi-driver", {"phase": "Failed", "containerStatuses": [status]})
    result = cli(["status", *M, "pi-driver"], fake)
    assert result.code == 0, result.err
    assert "exit code 1 (Error): ModuleNotFoundError: No module named 'numpy'" in result.out
    assert "termination message (the end of the driver's log):" in result.out
    assert "    ModuleNotFoundError: No module named 'numpy'" in result.out
    assert "log line 10" not in result.out and "log line 11" in result.out  # the last 20 lines
