"""A PySpark application that reports who it is to the API server and what its process was given.

Prints one JSON line: the job's answer, the executors that ran it, the driver's master, the Kubernetes
identity its own client configuration authenticates as (a SelfSubjectReview), and the in-cluster
environment (KUBERNETES_SERVICE_HOST/PORT, the service-account directory) the kubelet provided.
"""

import json
import os

from kubernetes import client as k8s_client
from pyspark.sql import SparkSession

from k8s_backend.kube.config import build_client_settings
from k8s_backend.kube.masters import parse_master
from k8s_backend.kube.settings import ApiClientConf

spark = SparkSession.builder.appName("whoami").getOrCreate()
sc = spark.sparkContext
total = sc.parallelize(range(1000), 4).sum()
master = sc.master
executors = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1
spark.stop()

# The same client configuration the driver's backend built from its master and properties.
api_url = parse_master(master).api_url
settings = build_client_settings(ApiClientConf(master=api_url))
with k8s_client.ApiClient(settings.configuration) as api_client:
    review = k8s_client.AuthenticationV1Api(api_client).create_self_subject_review(
        k8s_client.V1SelfSubjectReview()
    )
sa_dir = os.environ.get("K8S_BACKEND_SERVICE_ACCOUNT_DIR", "")
print(
    json.dumps(
        {
            "sum": total,
            "executors": executors,
            "master": master,
            "client_source": settings.source,
            "client_host": settings.configuration.host,
            "user": review.status.user_info.username,
            "kubernetes_service": [
                os.environ.get("KUBERNETES_SERVICE_HOST"),
                os.environ.get("KUBERNETES_SERVICE_PORT"),
            ],
            "service_account_files": sorted(os.listdir(sa_dir)) if sa_dir else [],
        }
    ),
    flush=True,
)
