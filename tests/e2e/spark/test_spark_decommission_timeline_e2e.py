"""A decommissioned executor's blocks on the timeline, on a real PySpark job (``pyk8s://local``, a fresh
Python process): with ``spark.decommission.enabled`` and ``spark.storage.decommission.*`` on, a job caches
an RDD of 8 partitions on 2 executors, one executor holding cached blocks is decommissioned through the
driver's scheduler backend (``decommissionExecutors``, as dynamic allocation or a drain does), it migrates
its blocks (the executor left then holds all 8) and exits itself with ``Finished decommissioning``, and
the backend's timeline, live and in the HTML file ``stop()`` writes, shows ``decommission`` then
``migrated`` for it, with no disruption notice. Asserted on what the driver and the page say, not on
timing."""

from __future__ import annotations

import html
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import json, sys, threading, time
from pyspark.sql import SparkSession
from k8s_backend.spark.pytest_plugin import ExecutorControl
from k8s_backend.spark.status import FACTORY_ATTRIBUTE

conf = {
    "spark.ui.enabled": "false",
    "spark.executor.memory": "512m",
    "spark.executor.instances": "2",
    "spark.decommission.enabled": "true",
    "spark.storage.decommission.enabled": "true",
    "spark.storage.decommission.rddBlocks.enabled": "true",
    "spark.kubernetes.report.timeline": sys.argv[1],
}
builder = SparkSession.builder.master("pyk8s://local")
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
sc = spark.sparkContext
control = ExecutorControl(spark)
control.wait_for(2)
monitor = getattr(sc._gateway, FACTORY_ATTRIBUTE).current.backend.parts.monitor


def rdd_blocks():
    listed = sc._jsc.sc().statusStore().executorList(True)
    summaries = sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava(listed)
    return {str(s.id()): int(s.rddBlocks()) for s in summaries if str(s.id()) != "driver"}


def markers():
    return [[kind, text] for _, kind, text in monitor.recent_activity(50)[1]]


def wait(done, what):
    pause = threading.Event()
    deadline = time.monotonic() + 300  # a bound on the wait for the condition, not a timing assert
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited for {what}: blocks {rdd_blocks()}, markers {markers()}")
        pause.wait(0.2)


cached = sc.parallelize(range(20000), 8).map(lambda x: x * 2).cache()
first = cached.sum()
wait(lambda: sum(rdd_blocks().values()) == 8, "the 8 cached partitions in the status store")
before = rdd_blocks()
victim = max(before, key=lambda i: (before[i], -int(i)))
control.decommission(victim)
control.wait_until_gone(victim)
wait(lambda: any(kind == "migrated" for kind, _ in markers()), "the migrated marker")
# Spark's status store writes a live executor at most every spark.ui.liveUpdate.period (100 ms) and
# flushes the rest on the next heartbeat, so block updates that came close together show up late: wait
# until it has handled the victim's removal and counts every migrated block on the executor left. A
# block lost in the migration never shows up, and the wait's error names the counts.
total = sum(before.values())
wait(
    lambda: victim not in rdd_blocks() and sum(rdd_blocks().values()) == total,
    "the status store without the victim and with every block on the executor left",
)
report = {
    "victim": victim,
    "before": before,
    "after": rdd_blocks(),
    "markers": markers(),
    "answers": [first, cached.sum()],
}
print("REPORT " + json.dumps(report))
spark.stop()
"""


def test_a_decommissioned_executors_finished_migration_is_a_marker_after_its_decommission(
    tmp_path: Path,
) -> None:
    script, page = tmp_path / "driver.py", tmp_path / "timeline.html"
    script.write_text(textwrap.dedent(DRIVER))
    result = subprocess.run(
        [sys.executable, str(script), str(page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=850,
        check=False,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
    line = next(x for x in result.stdout.splitlines() if x.startswith("REPORT "))
    report = json.loads(line[len("REPORT ") :])
    victim = report["victim"]
    assert report["before"][victim] > 0, report  # it held cached blocks when it was decommissioned
    # Its blocks moved to the executor left, before the job read them again (nothing was recomputed).
    assert sum(report["after"].values()) == sum(report["before"].values()) == 8, report
    assert report["answers"] == [399980000, 399980000], report
    kinds = [kind for kind, _ in report["markers"]]
    assert "notice" not in kinds and "gone" not in kinds, report  # asked by the driver, not noticed
    assert kinds.index("decommission") < kinds.index("migrated"), report
    [decommission] = [text for kind, text in report["markers"] if kind == "decommission"]
    [migrated] = [text for kind, text in report["markers"] if kind == "migrated"]
    assert decommission == f"decommissioning {victim}"
    assert migrated == (
        f"executor {victim} finished decommissioning: its blocks migrated (every cached RDD and shuffle "
        "block it held; spark.storage.decommission.enabled=true)"
    )
    # The page stop() wrote draws both markers, in that order, with their texts.
    drawn = page.read_text()
    at_decommission = drawn.index('class="marker decommission"')
    at_migrated = drawn.index('class="marker migrated"')
    assert at_decommission < at_migrated
    assert html.escape(migrated, quote=True) in drawn
    assert 'class="marker notice"' not in drawn
