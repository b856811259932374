"""A real PySpark job with ``spark.authenticate`` on a local cluster: the executors authenticate with
the RPC secret they read from the application's Secret (never from their pod specs), and stop()
deletes that Secret with the executors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SECRET = "zz-e2e-rpc-secret-zz"

DRIVER = """
import json
from k8s_backend.kube.port import PODS, SECRETS
from k8s_backend.spark import session
from k8s_backend.testing import LocalCluster

with LocalCluster() as cluster:
    conf = cluster.spark_conf()  # its master is pyk8s://, as session() takes
    conf.update({{
        "spark.ui.enabled": "false",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "2",
        "spark.authenticate": "true",
        "spark.authenticate.secret": {secret!r},
    }})
    spark = session(cluster.master, conf, app_name="auth-secret")
    print("SUM", spark.sparkContext.parallelize(range(1000), 4).sum())
    pods = cluster.fake.objects(PODS, "default")
    executors = [p for p in pods if p["metadata"]["labels"].get("spark-role") == "executor"]
    print("EXECUTORS", len(executors))
    print("SECRET_IN_PODS", any({secret!r} in json.dumps(p) for p in executors))
    refs = {{
        e["valueFrom"]["secretKeyRef"]["name"]
        for p in executors
        for e in p["spec"]["containers"][0]["env"]
        if e["name"] == "_SPARK_AUTH_SECRET"
    }}
    secrets = [s["metadata"]["name"] for s in cluster.fake.objects(SECRETS, "default")]
    print("REFERENCED", sorted(refs) == sorted(secrets) and len(secrets) == 1)
    spark.stop()
    print("SECRETS_AFTER_STOP", len(cluster.fake.objects(SECRETS, "default")))
"""


def test_executors_authenticate_with_the_secret_from_the_applications_secret(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER.format(secret=SECRET)))
    result = subprocess.run(
        [sys.executable, str(driver)], cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
    lines = result.stdout.splitlines()
    assert "SUM 499500" in lines  # executors passed the RPC authentication
    assert "EXECUTORS 2" in lines
    assert "SECRET_IN_PODS False" in lines
    assert "REFERENCED True" in lines
    assert "SECRETS_AFTER_STOP 0" in lines
