"""Estimate pi on executors that k8s_backend runs (Spark's classic example).

    python examples/pi.py                                  # an embedded local cluster (pyk8s://local)
    python examples/pi.py --master pyk8s://https://HOST:6443 10
    K8S_BACKEND_MASTER=pyk8s:// python examples/pi.py      # kubeconfig or in-cluster

Against a real cluster nothing else changes; set SPARK_IMAGE for another executor image.
"""

from __future__ import annotations

import argparse
import os
from operator import add
from random import random

from k8s_backend.spark import session


def inside(_: int) -> int:
    x, y = random() * 2 - 1, random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("partitions", nargs="?", type=int, default=2)
    parser.add_argument("--master", default=os.environ.get("K8S_BACKEND_MASTER", "pyk8s://local"))
    args = parser.parse_args()
    conf = {
        "spark.executor.instances": "2",
        "spark.kubernetes.container.image": os.environ.get("SPARK_IMAGE", "apache/spark:{{SPARK_VERSION}}"),
    }
    spark = session(args.master, conf, app_name="PythonPi")
    try:
        n = 100_000 * args.partitions
        count = spark.sparkContext.parallelize(range(1, n + 1), args.partitions).map(inside).reduce(add)
        print(f"Pi is roughly {4.0 * count / n:f}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
