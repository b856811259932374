"""Cluster mode with ``spark.authenticate`` on an embedded local cluster: the driver gets its secret
properties from its Secret, the executors theirs from the application's, and none is in a ConfigMap."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import APPS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

RPC, S3 = "zz-cluster-rpc-secret-zz", "zz-cluster-s3-secret-zz"
CONF = {
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.authenticate": "true",
    "spark.authenticate.secret": RPC,
    "spark.hadoop.fs.s3a.secret.key": S3,
}


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def test_a_cluster_mode_driver_and_its_executors_authenticate_with_secrets_from_secrets(
    tmp_path: Path,
) -> None:
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    argv = [*command, "submit", "--master", "pyk8s://local", "--deploy-mode", "cluster", "--follow-log"]
    argv += ["--num-executors", "1", "-v"]
    for key, value in CONF.items():
        argv += ["--conf", f"{key}={value}"]
    done = subprocess.run(
        [*argv, str(APPS / "secret_check.py")],
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    assert f"DIGEST spark.authenticate.secret {digest(RPC)}" in done.stdout
    assert f"DIGEST spark.hadoop.fs.s3a.secret.key {digest(S3)}" in done.stdout
    assert "CONF_MAP_READ True" in done.stdout
    assert "SECRETS_IN_CONF_MAP False" in done.stdout
    assert "S3_IN_CONF_MAP False" in done.stdout
    assert "SUM 499500" in done.stdout  # executors passed the RPC authentication
