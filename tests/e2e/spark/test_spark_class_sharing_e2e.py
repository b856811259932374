"""Class data sharing for real driver JVMs, each a fresh Python process on ``pyk8s://local`` with a cache
folder of its own: the first driver records the archive as it exits, the next maps it (the JVM's memory
map shows the file) and runs its job, and one told not to share maps nothing. No CDS message reaches the
driver's stderr."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import sys
import k8s_backend.spark  # a pyk8s:// master for the builder
from pyspark.sql import SparkSession

builder = SparkSession.builder.master("pyk8s://local").config("spark.executor.instances", "1")
for pair in sys.argv[1:]:
    builder = builder.config(*pair.split("=", 1))
spark = builder.config("spark.ui.enabled", "false").getOrCreate()
jvm = spark.sparkContext._gateway.proc.pid
with open(f"/proc/{jvm}/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})
print("MAPPED", [m for m in mapped if "class-archives" in m], flush=True)
print("PROPERTY", spark.sparkContext._jvm.java.lang.System.getProperty("k8s.backend.test"), flush=True)
print("SUM", spark.sparkContext.parallelize(range(100), 2).sum(), flush=True)
spark.stop()
"""


def run_driver(tmp_path: Path, *properties: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = dict(os.environ, K8S_BACKEND_CACHE_DIR=str(tmp_path / "cache"))
    for name in ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS"):
        env.pop(name, None)  # a CDS option or a Java agent of the machine's would turn recording off
    result = subprocess.run(
        [sys.executable, str(script), *properties],
        cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False, env=env,
    )
    assert result.returncode == 0, result.stderr[-6000:]
    assert "SUM 4950" in result.stdout.splitlines(), result.stdout
    for output in (result.stdout, result.stderr):  # (HotSpot prints a failed dump on stdout)
        assert not re.search(r"\bcds\b|SharedArchive|ArchiveClasses", output, re.IGNORECASE), output[-6000:]
    return result


def mapped(result: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith("MAPPED"))


def test_the_first_driver_records_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    folder = tmp_path / "cache" / "class-archives"
    try:
        records_then_maps(tmp_path, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # 110-150 MB that pytest would keep with its last runs


def records_then_maps(tmp_path: Path, folder: Path) -> None:
    first = run_driver(tmp_path)
    assert mapped(first) == "MAPPED []"
    archives = sorted(folder.iterdir())
    assert [a.suffix for a in archives] == [".jsa", ".lock"], archives  # no half-written file, no marker
    # A driver's classes, not a bare gateway's: this JVM ran a SparkContext and a job.
    assert archives[0].stat().st_size > 60 * 2**20

    second = run_driver(tmp_path, "spark.driver.extraJavaOptions=-Dk8s.backend.test=kept")
    assert mapped(second) == f"MAPPED [{str(archives[0])!r}]"
    assert "PROPERTY kept" in second.stdout.splitlines()  # the driver's own Java options still apply
    assert sorted(folder.iterdir()) == archives

    off = run_driver(tmp_path, "spark.kubernetes.driver.classDataSharing=false")
    assert mapped(off) == "MAPPED []"
