"""Cluster mode against a ``k8s-backend local`` https server on this machine: the driver "pod" runs here
and reuses the server's URL and CA; any other loopback https server (a kind cluster) gets the
in-cluster URL, as a real driver pod needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import APPS, ENDPOINT, IMAGE

from k8s_backend.cli.cluster_api import Connection, is_local_cluster
from k8s_backend.cli.errors import ApiEndpoint
from k8s_backend.cli.submission import Submission, build_submission
from k8s_backend.cli.submit_args import parse_submit_args
from k8s_backend.cli.submit_cluster import LOOPBACK_HOSTS, driver_master
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.local import LocalCluster
from k8s_backend.testing.fake import FakeKubernetes


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(tls=True) as running:
        yield running


def sub() -> Submission:
    argv = ["--deploy-mode", "cluster", "--conf", IMAGE, str(APPS / "pi.py")]
    return build_submission(parse_submit_args(argv), {})


def test_only_a_local_clusters_https_is_reused_by_the_driver(cluster: LocalCluster) -> None:
    local = Connection(cluster.api(), ApiEndpoint(cluster.url, "test"))
    assert is_local_cluster(local, LOOPBACK_HOSTS)
    assert driver_master(sub(), cluster.url, local_https=True) == "pyk8s://" + cluster.url
    # A loopback https server that is not ours (kind, minikube): its driver pods need the service URL.
    assert driver_master(sub(), "https://127.0.0.1:6443", local_https=False) == IN_CLUSTER_MASTER
    assert not is_local_cluster(Connection(FakeKubernetes(), ENDPOINT), LOOPBACK_HOSTS)


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_cluster_mode_runs_on_a_local_https_cluster(cluster: LocalCluster, tmp_path: Path) -> None:
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    argv = [*command, "submit", "--master", "pyk8s://" + cluster.url, "--deploy-mode", "cluster"]
    for key, value in {
        **{k: v for k, v in cluster.spark_conf().items() if "submission" not in k and k != "spark.master"},
        "spark.executor.instances": "1",
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
    }.items():
        argv += ["--conf", f"{key}={value}"]
    done = subprocess.run(
        [*argv, "--follow-log", str(APPS / "pi.py"), "2"],
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    assert "Pi is roughly 3.1" in done.stdout
