"""The whole stack in fresh Python processes: PySpark driver, bridge, the real Python backend and the
embedded local cluster (``pyk8s://local``), through each way a script can get its session."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from repo import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROOT = REPO_ROOT
QUIET = {"spark.ui.enabled": "false", "spark.executor.memory": "512m"}


def run_python(args: list[str], cwd: Path, timeout: float = 800) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        tail = result.stderr[-6000:]
        pytest.fail(f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr (tail):\n{tail}")
    return result


def test_the_pi_example_runs_on_an_embedded_local_cluster(tmp_path: Path) -> None:
    result = run_python([str(ROOT / "examples" / "pi.py"), "2"], cwd=tmp_path)
    assert "Pi is roughly 3.1" in result.stdout


PLAIN_SCRIPT = """
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("unmodified").getOrCreate()
print("MASTER", spark.sparkContext.master)
print("SUM", spark.sparkContext.parallelize(range(100)).sum())
spark.stop()
"""

DRIVER = """
import runpy, sys
import k8s_backend.spark
from pyspark.sql import SparkSession

quiet = {quiet!r}

# 1. The builder, after the import, with nothing else.
builder = SparkSession.builder.master("pyk8s://local").config("spark.executor.instances", "2")
for key, value in quiet.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
print("BUILDER", spark.sparkContext.parallelize(range(100)).sum())
spark.stop()

# 2. An unmodified script, prepared the way the submit command does it.
factory = k8s_backend.spark.prepare("pyk8s://local", dict(quiet, **{{"spark.executor.instances": "1"}}))
sys.argv = ["plain.py"]
runpy.run_path({script!r}, run_name="__main__")
print("OUR_BACKEND", type(factory.current.backend).__name__)
print("CLUSTER_STOPPED", factory.local is None)
"""


def test_the_builder_after_import_and_an_unmodified_script_after_prepare(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER.format(quiet=QUIET, script=str(script))))
    result = run_python([str(driver)], cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert "BUILDER 4950" in lines
    assert "MASTER pyk8s://local" in lines
    assert "SUM 4950" in lines
    assert "OUR_BACKEND KubernetesClusterSchedulerBackend" in lines
    assert "CLUSTER_STOPPED True" in lines
