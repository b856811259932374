"""A PySpark driver for the node tier, run in a fresh Python process (its own JVM).

``python node_support.py OUT.json CLUSTER.json``: CLUSTER.json holds ``master`` and ``conf`` (what
:meth:`LocalCluster.spark_conf` hands out); the job's observations go to OUT.json.
"""

from __future__ import annotations

import json
import platform
import socket
import sys
import time
from pathlib import Path


def where_am_i(_: object) -> list[tuple[str, str, int, str]]:
    """Runs in the executor's Python worker: the container's view of itself."""
    import os

    return [(socket.gethostname(), platform.python_version(), os.getuid(), os.getcwd())]


def main(out_path: str, cluster_path: str) -> None:
    from k8s_backend.spark import session

    cluster = json.loads(Path(cluster_path).read_text())
    conf = {
        **cluster["conf"],
        "spark.executor.instances": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.kubernetes.executor.request.cores": "100m",
    }
    report: dict[str, object] = {}
    spark = session(cluster["master"], conf, app_name="node-tier")
    try:
        sc = spark.sparkContext
        deadline = time.monotonic() + 240
        while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        report["registered"] = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        report["answer"] = sc.parallelize(range(10_000), 8).map(lambda x: x * x).sum()
        report["workers"] = sorted(set(sc.parallelize(range(8), 8).mapPartitions(where_am_i).collect()))
        hosts = [e.host() for e in sc._jsc.sc().statusTracker().getExecutorInfos()]
        report["executor_hosts"] = sorted(hosts)
        report["driver_python"] = platform.python_version()
    finally:
        spark.stop()
        report["stopped"] = True
        Path(out_path).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
