"""Executor rolling on a real PySpark job (``pyk8s://local``, a fresh Python process): with Spark's
ExecutorRollPlugin listed and a 5 s rollInterval, k8s_backend's roller decommissions an executor through
the driver, a replacement registers, and the job's answers stay right throughout. Asserted on
status()["roller"] and the driver's executor ids, not on timing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import json, threading, time
import k8s_backend.spark
from k8s_backend.spark import status
from pyspark.sql import SparkSession

conf = {
    "spark.ui.enabled": "false",
    "spark.executor.memory": "512m",
    "spark.executor.instances": "2",
    "spark.decommission.enabled": "true",
    "spark.plugins": "org.apache.spark.scheduler.cluster.k8s.ExecutorRollPlugin",
    "spark.kubernetes.executor.rollInterval": "5s",
    "spark.kubernetes.executor.rollPolicy": "ID",
}
builder = SparkSession.builder.master("pyk8s://local")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
sc = spark.sparkContext


def executor_ids():
    seq = sc._jsc.sc().getExecutorIds()
    return sorted(str(i) for i in sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


pause = threading.Event()
first, answers, rolled, ids = None, [], None, []
deadline = time.monotonic() + 600  # a bound on the wait for the conditions below, not a timing assert
while time.monotonic() < deadline:
    # Jobs keep running while executors are rolled under them.
    answers.append(sc.parallelize(range(1000), 4).map(lambda x: x * 2).sum())
    ids = executor_ids()
    if first is None and len(ids) == 2:
        first = ids
    rolls = status(spark)["roller"]["recent_rolls"]
    if first is not None and rolls:
        rolled = rolls[0]["executor_id"]
        if rolled not in ids and len(ids) >= 2:
            break
    pause.wait(0.5)
report = {
    "first": first,
    "rolled": rolled,
    "ids": ids,
    "answers": sorted(set(answers)),
    "final": sc.parallelize(range(10000), 8).sum(),
    "roller": status(spark)["roller"],
}
print("REPORT " + json.dumps(report))
spark.stop()
"""


def test_a_real_job_gets_an_executor_rolled_and_replaced_and_stays_right(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=850, check=False
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
    line = next(x for x in result.stdout.splitlines() if x.startswith("REPORT "))
    report = json.loads(line[len("REPORT ") :])
    roller = report["roller"]
    assert roller["policy"] == "ID" and roller["interval"] == 5.0
    # Policy ID: the smallest id of the first two executors (no roll happens before both registered).
    assert report["rolled"] == "1", report
    assert report["first"] is not None, report
    rolled = [r["executor_id"] for r in roller["recent_rolls"]]
    assert rolled and rolled == sorted(set(rolled), key=int), report  # each executor rolled once, in order
    assert len(report["ids"]) >= 2 and not set(rolled[:1]) & set(report["ids"]), report
    assert report["answers"] == [999000] and report["final"] == 49995000
    assert roller["recent_rolls"][0]["reason"].startswith("chosen by policy ID among 2 candidate executors")
