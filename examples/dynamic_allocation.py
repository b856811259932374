"""Dynamic allocation: executors come when tasks queue up and go when they sit idle.

    python examples/dynamic_allocation.py                  # pyk8s://local
    python examples/dynamic_allocation.py --master pyk8s://https://HOST:6443

Spark asks k8s_backend for more executors while tasks wait (doRequestTotalExecutors) and releases idle
ones (doKillExecutors); the script prints the executor count as that happens.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

from k8s_backend.spark import session


def executor_count(spark: object) -> int:
    # getExecutorInfos() lists the driver too.
    return len(spark.sparkContext.statusTracker().getExecutorInfos()) - 1  # type: ignore[attr-defined]


def slow(x: int) -> int:
    time.sleep(0.5)
    return x


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--master", default=os.environ.get("K8S_BACKEND_MASTER", "pyk8s://local"))
    parser.add_argument("--max-executors", type=int, default=3)
    args = parser.parse_args()
    conf = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "1",
        "spark.dynamicAllocation.maxExecutors": str(args.max_executors),
        "spark.dynamicAllocation.executorIdleTimeout": "5s",
        "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
        "spark.kubernetes.container.image": os.environ.get("SPARK_IMAGE", "apache/spark:{{SPARK_VERSION}}"),
    }
    spark = session(args.master, conf, app_name="DynamicAllocation")
    stop = threading.Event()

    def report() -> None:
        last = -1
        while not stop.wait(1.0):
            count = executor_count(spark)
            if count != last:
                print(f"[{time.strftime('%H:%M:%S')}] executors: {count}", flush=True)
                last = count

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        print("a job with 40 slow tasks: executors are added while tasks wait")
        total = spark.sparkContext.parallelize(range(40), 40).map(slow).sum()
        print(f"sum = {total}; now idle: executors are released after 5 s")
        deadline = time.monotonic() + 120
        while executor_count(spark) > 0 and time.monotonic() < deadline:
            stop.wait(1.0)
        print(f"[{time.strftime('%H:%M:%S')}] executors: {executor_count(spark)}")
    finally:
        stop.set()
        spark.stop()


if __name__ == "__main__":
    main()
