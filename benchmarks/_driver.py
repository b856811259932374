"""One Spark driver for ``compare_spark.py``, in a process of its own (pyspark runs one JVM per process).

Run by the benchmark, not by hand: ``python _driver.py '{"master": ..., "conf": {...}, "wait": N}'``.
It prints JSON lines on stdout, read by the parent:

- ``{"event": "started", "t0": ..., "app": ...}`` once the SparkSession exists (``t0``: just before
  the session was asked for, on the machine-wide monotonic clock that the parent shares);
- ``{"event": "registered", "t": ...}`` once ``wait`` executors registered (only when ``wait`` > 0);
- then it waits for a line on stdin, and prints ``{"event": "cpu", "python": s, "jvm": s}`` (CPU
  seconds of this Python process and of its driver JVM so far, with their peak resident memory in MiB
  as ``rss_python`` and ``rss_jvm``), stops the session and prints
  ``{"event": "stopped", "t": ...}``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any


def emit(event: str, **facts: Any) -> None:
    print(json.dumps({"event": event, **facts}), flush=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) from /proc, in seconds."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory (``VmHWM``) in MiB, from /proc."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(spec: dict[str, Any]) -> None:
    master: str = spec["master"]
    conf: dict[str, str] = spec["conf"]
    t0 = time.monotonic()
    if master.startswith("pyk8s://"):
        from k8s_backend.spark import session

        spark = session(master, conf, "compare-spark")
    else:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master(master).appName("compare-spark")
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    sc = spark.sparkContext
    emit("started", t0=t0, t=time.monotonic(), app=sc.applicationId)
    wanted = int(spec.get("wait", 0))
    if wanted:
        status, pause = sc._jsc.sc(), threading.Event()
        deadline = time.monotonic() + 300
        while status.getExecutorMemoryStatus().size() - 1 < wanted and time.monotonic() < deadline:
            pause.wait(0.05)  # the driver is counted among the "executors" too
        emit("registered", t=time.monotonic(), count=status.getExecutorMemoryStatus().size() - 1)
    sys.stdin.readline()
    from pyspark.core.context import SparkContext

    jvm = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    emit(
        "cpu", python=time.process_time(), jvm=cpu_seconds(jvm),
        rss_python=peak_rss_mb(os.getpid()), rss_jvm=peak_rss_mb(jvm),
    )  # fmt: skip
    spark.stop()
    emit("stopped", t=time.monotonic())


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
