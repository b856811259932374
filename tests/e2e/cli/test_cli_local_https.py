"""Cluster mode against a ``k8s-backend local`` https server on this machine: the driver "pod" runs here
and reuses the server's URL and CA; any other loopback https server (a kind cluster) gets the
in-cluster URL, as a real driver pod needs."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import APPS, ENDPOINT, IMAGE

from k8s_backend.cli.common.cluster_api import Connection, is_local_cluster
from k8s_backend.cli.common.errors import ApiEndpoint
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import LOOPBACK_HOSTS, driver_master
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import SECRETS
from k8s_backend.local import LocalCluster
from k8s_backend.local.images import default_spark_image
from k8s_backend.testing import FakeKubernetes

IMAGE_KEY = "spark.kubernetes.container.image"


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


@pytest.mark.e2e
@pytest.mark.timeout(900)
@pytest.mark.parametrize("driver_ca", [False, True], ids=["kubeconfig-ca", "driver-caCertFile"])
def test_cluster_mode_with_only_the_kubeconfig_and_the_printed_status_command(
    cluster: LocalCluster, tmp_path: Path, driver_ca: bool
) -> None:
    """The kubeconfig `k8s-backend local` writes (token and CA data inside) is all the user gives; the
    submission does not wait, so the driver outlives it (and the client's temporary CA file): the driver
    reaches the https server with the token and CA forwarded in its Secret, and the printed status
    command, run verbatim from elsewhere, shows it succeeded. With ``driver_ca`` the driver's CA is
    given as spark.kubernetes.authenticate.driver.caCertFile, a local file deleted once submit returns:
    the driver uses the copy shipped in its Secret (beside the kubeconfig's token), not the local path."""
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    shutil.copy(cluster.kubeconfig, tmp_path / "kc.yaml")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    argv = [*command, "submit", "--kubeconfig", "kc.yaml", "--master", "pyk8s://" + cluster.url]
    argv += ["--deploy-mode", "cluster", "--conf", f"{IMAGE_KEY}={default_spark_image()}"]
    for setting in (
        "spark.executor.instances=1",
        "spark.executor.memory=512m",
        "spark.ui.enabled=false",
        "spark.kubernetes.submission.waitAppCompletion=false",
    ):
        argv += ["--conf", setting]
    driver_ca_file = tmp_path / "driver-ca.pem"
    if driver_ca:
        assert cluster.ca_cert is not None
        shutil.copy(cluster.ca_cert, driver_ca_file)
        argv += ["--conf", f"spark.kubernetes.authenticate.driver.caCertFile={driver_ca_file}"]
    done = subprocess.run(
        [*argv, str(APPS / "pi.py"), "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    status, _ = [shlex.split(c) for c in re.findall(r"`(k8s-backend [^`]+)`", done.stderr)]
    namespace, driver = status[-1].split(":")
    if driver_ca:
        driver_ca_file.unlink()
        secret = cluster.api(namespace).get(SECRETS, namespace, f"{driver}-token")
        assert sorted(secret["data"]) == ["driver-ca.crt", "token"]  # the user's CA, not the kubeconfig's
    assert cluster.wait_until(lambda: cluster.pod_phase(driver, namespace) in ("Succeeded", "Failed"), 600)
    log_path = cluster.kubelet.log_path(namespace, driver, "spark-kubernetes-driver")
    log = log_path.read_text() if log_path is not None else ""
    assert "CERTIFICATE_VERIFY_FAILED" not in log and "Unauthorized" not in log, log[-5000:]
    assert "Pi is roughly 3.1" in log, log[-5000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    verbatim = [*command, *status[1:]]
    shown = subprocess.run(
        verbatim, capture_output=True, text=True, timeout=120, check=False, cwd=elsewhere, env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert "driver:         Succeeded" in shown.stdout, shown.stdout
