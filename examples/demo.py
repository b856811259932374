"""The main job: the Pi example on executors that k8s_backend runs as pods of an embedded local cluster.

    python examples/demo.py                 # 3 executors, 10 partitions
    python examples/demo.py --executors 2 20

Prints the estimate, how long the executors took to come up, and a table of the executor pods and how
they ended. The pods are read from the local cluster's API while the job runs (a watch), because
``spark.stop()`` deletes them and stops the cluster.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from operator import add
from random import random
from typing import Any

from pyspark.sql import SparkSession

from k8s_backend.kube.port import PODS
from k8s_backend.spark import prepare

MASTER = "pyk8s://local"
# JVM start-up speed on small machines; the executor command is otherwise what Spark's image runs.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def inside(_: int) -> int:
    x, y = random() * 2 - 1, random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


class PodTable:
    """The latest state of every pod of a namespace, kept from a watch until the API closes."""

    def __init__(self, api: Any, namespace: str = "default") -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, str]] = {}
        self._stream = api.watch(PODS, namespace, resource_version="0")  # existing pods, then changes
        self._thread = threading.Thread(target=self._follow, name="pod-table", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        for event in self._stream:
            if event.type == "BOOKMARK":
                continue
            pod = event.object
            meta, status = pod.get("metadata") or {}, pod.get("status") or {}
            row = {
                "pod": str(meta.get("name")),
                "executor": str((meta.get("labels") or {}).get("spark-exec-id", "-")),
                "phase": str(status.get("phase") or "-"),
                "exit code": "-",
                "reason": "-",
            }
            for container in status.get("containerStatuses") or []:
                terminated = (container.get("state") or {}).get("terminated")
                if terminated:
                    row["exit code"] = str(terminated.get("exitCode"))
                    row["reason"] = str(terminated.get("reason") or "-")
            deleted = event.type == "DELETED" or bool(meta.get("deletionTimestamp"))
            row["ended"] = ending(row["exit code"], deleted)
            with self._lock:
                self._rows[row["pod"]] = row

    def close(self) -> None:
        self._stream.close()
        self._thread.join(10.0)

    def render(self) -> str:
        with self._lock:
            rows = sorted(self._rows.values(), key=lambda r: (len(r["executor"]), r["executor"]))
        columns = ["pod", "executor", "phase", "exit code", "reason", "ended"]
        widths = {c: max([len(c)] + [len(r[c]) for r in rows]) for c in columns}
        lines = ["  ".join(c.upper().ljust(widths[c]) for c in columns)]
        lines += ["  ".join(r[c].ljust(widths[c]) for c in columns) for r in rows]
        return "\n".join(lines)


def ending(exit_code: str, deleted: bool) -> str:
    """How a pod ended, in words: spark.stop() both stops executors and deletes their pods, so an
    executor either exits by itself (0) or gets the SIGTERM of its pod's deletion first (143)."""
    pod = "pod deleted" if deleted else "pod kept"
    if exit_code == "-":
        return pod if deleted else "still running"
    if exit_code == "0":
        return f"exited cleanly, {pod}"
    if exit_code == "143":
        return f"SIGTERM (pod deletion), {pod}" if deleted else f"SIGTERM, {pod}"
    if exit_code == "137":
        return f"SIGKILL, {pod}"
    return f"failed, {pod}"


def registered_executors(spark: SparkSession) -> int:
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1  # minus the driver


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("partitions", nargs="?", type=int, default=10)
    parser.add_argument("--executors", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    conf = {
        "spark.executor.instances": str(args.executors),
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
    }
    started = time.monotonic()
    # prepare() keeps the backend factory, and through it the embedded cluster, at hand for the table.
    factory = prepare(MASTER, conf)
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    table = PodTable(factory.local.fake)
    try:
        pause, deadline = threading.Event(), time.monotonic() + 300
        while registered_executors(spark) < args.executors and time.monotonic() < deadline:
            pause.wait(0.1)
        ready = time.monotonic() - started
        n = 100_000 * args.partitions
        count = spark.sparkContext.parallelize(range(1, n + 1), args.partitions).map(inside).reduce(add)
        print(f"Pi is roughly {4.0 * count / n:f}")
        registered = registered_executors(spark)
        print(f"{registered} of {args.executors} executors registered {ready:.1f} s after session start")
    finally:
        spark.stop()  # deletes the executor pods, then stops the embedded cluster
        table.close()
    print(f"\nExecutor pods on {MASTER}, as last seen before spark.stop() removed them:")
    print(table.render())


if __name__ == "__main__":
    main()
