"""Autoscaler hints with a real PySpark job: executors that hold cached blocks or shuffle outputs carry
"not safe to evict", and lose it when they hold nothing (facts from Spark through the bridge)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import time
import k8s_backend.spark
from pyspark.sql import SparkSession

SAFE = "cluster-autoscaler.kubernetes.io/safe-to-evict"
spark = (
    SparkSession.builder.master("pyk8s://local")
    .config("spark.ui.enabled", "false")
    .config("spark.executor.memory", "512m")
    .config("spark.executor.instances", "2")
    .config("spark.kubernetes.executor.autoscalerHints.enabled", "true")
    .config("spark.kubernetes.executor.autoscalerHints.interval", "200ms")
    .getOrCreate()
)
sc = spark.sparkContext
backend = sc._gateway._k8s_backend_factory.current.backend  # the Python backend of this session


def annotated():
    pods = backend.parts.store.current().pods.values()
    return sorted(s.executor_id for s in pods if (s.metadata.get("annotations") or {}).get(SAFE) == "false")


def until(check, what, limit=300.0):
    # A generous bound only against a hang; the condition is what is waited for.
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}: annotated={annotated()} "
                             f"status={backend.status()['autoscaler_hints']}")
        time.sleep(0.1)


cached = sc.parallelize(range(10000), 8).map(lambda x: x * 2).cache()
print("CACHED_SUM", cached.sum())
until(lambda: len(annotated()) == 2, "both executors annotated while they hold cached blocks")
print("PROTECTED", annotated())
cached.unpersist(blocking=True)
until(lambda: annotated() == [], "the hints removed once nothing is held")
print("RELEASED", annotated())
pairs = sc.parallelize(range(1000), 4).map(lambda x: (x % 10, 1)).reduceByKey(lambda a, b: a + b)
print("SHUFFLE_KEYS", len(pairs.collect()))
until(lambda: annotated() != [], "an executor annotated while it holds shuffle outputs")
print("SHUFFLE_PROTECTED", len(annotated()) >= 1)
status = backend.status()["autoscaler_hints"]
print("PATCHES", status["patches"], "FAILED", status["failed_patches"])
spark.stop()
"""


def test_held_blocks_and_shuffle_outputs_keep_the_hints_and_idle_executors_drop_them(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    result = subprocess.run(
        [sys.executable, str(driver)], cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
    lines = result.stdout.splitlines()
    assert "CACHED_SUM 99990000" in lines
    assert "PROTECTED [1, 2]" in lines
    assert "RELEASED []" in lines
    assert "SHUFFLE_KEYS 10" in lines and "SHUFFLE_PROTECTED True" in lines
    patches = next(line for line in lines if line.startswith("PATCHES"))
    assert patches.endswith("FAILED 0"), patches
    # 2 set + 2 removed + at least 1 set again; a few more if tasks came and went between reads.
    assert int(patches.split()[1]) >= 5, patches
