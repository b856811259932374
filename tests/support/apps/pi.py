"""Spark's classic Pi example, unmodified PySpark: it knows nothing about k8s_backend."""

import sys
from operator import add
from random import random

from pyspark.sql import SparkSession


def inside(_: int) -> int:
    x, y = random() * 2 - 1, random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


if __name__ == "__main__":
    spark = SparkSession.builder.appName("PythonPi").getOrCreate()
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    n = 100000 * partitions
    count = spark.sparkContext.parallelize(range(1, n + 1), partitions).map(inside).reduce(add)
    print(f"Pi is roughly {4.0 * count / n:f}")
    spark.stop()
