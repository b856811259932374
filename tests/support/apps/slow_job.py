"""An application whose job runs until it is stopped: for Ctrl-C while a job runs."""

import time

from pyspark.sql import SparkSession


def slow(x: int) -> int:
    time.sleep(600)
    return x


if __name__ == "__main__":
    spark = SparkSession.builder.appName("slow-job").getOrCreate()
    print("JOB STARTS", flush=True)
    print(spark.sparkContext.parallelize(range(2), 2).map(slow).sum(), flush=True)
