"""Prints whether the driver received the secret properties, then runs a job on its executors."""

import hashlib
import os
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
conf = spark.sparkContext.getConf()
for key in ("spark.authenticate.secret", "spark.hadoop.fs.s3a.secret.key"):
    digest = hashlib.sha256(conf.get(key, "").encode()).hexdigest()[:12]
    print(f"DIGEST {key} {digest}")  # a digest: the log never shows the secret
# The driver's mounted ConfigMap: what anyone who may read ConfigMaps reads.
with open(os.path.join(os.environ["SPARK_CONF_DIR"], "spark.properties"), encoding="utf-8") as handle:
    mounted = handle.read()
print("CONF_MAP_READ", "spark.app.id" in mounted)
print("SECRETS_IN_CONF_MAP", any(conf.get(k, "") in mounted for k in ("spark.authenticate.secret",)))
print("S3_IN_CONF_MAP", conf.get("spark.hadoop.fs.s3a.secret.key", "") in mounted)
print("SUM", spark.sparkContext.parallelize(range(1000), 2).sum())
spark.stop()
sys.exit(0)
