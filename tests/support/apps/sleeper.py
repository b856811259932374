"""A long-running application with executors, for kill and gc tests: it runs until stopped."""

import time

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("sleeper").getOrCreate()
    print("SUM", spark.sparkContext.parallelize(range(10), 2).sum(), flush=True)
    while True:
        time.sleep(1)
