"""Imports a package from the ``--archives`` virtualenv on the executors, and reads the uploaded files."""

import os
import sys

from pyspark import SparkFiles
from pyspark.sql import SparkSession


def on_executor(_: int) -> str:
    import tinypkg  # only in the shipped environment: neither the driver nor the host has it

    return f"{tinypkg.VALUE}:{os.path.basename(sys.prefix)}"


spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
conf = sc.getConf()
print("APP", os.path.abspath(__file__))
for key in ("spark.archives", "spark.jars", "spark.submit.pyFiles", "spark.files"):
    print("CONF", key, conf.get(key, ""))
import helper  # noqa: E402  (a --py-files module, from the upload directory)

print("HELPER", helper.NAME)
with open(SparkFiles.get("data.txt"), encoding="utf-8") as handle:
    print("DATA", handle.read().strip())
print("EXECUTORS", sorted(set(sc.parallelize(range(4), 2).map(on_executor).collect())))
spark.stop()
sys.exit(0)
