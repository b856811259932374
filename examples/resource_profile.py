"""Stage-level scheduling: one stage runs on executors of a custom ResourceProfile, sized for it.

    python examples/resource_profile.py                    # pyk8s://local
    python examples/resource_profile.py --master pyk8s://https://HOST:6443 --gpus 1

k8s_backend gives each profile's executors their own pod size (cores, memory, overhead, GPUs). Custom
profiles need dynamic allocation, as on Spark's own Kubernetes backend. With ``--gpus N`` the profile
asks for N ``nvidia.com/gpu`` per executor and discovers them with Spark's getGpusResources.sh.
"""

from __future__ import annotations

import argparse
import os

from pyspark.resource import ExecutorResourceRequests, ResourceProfileBuilder, TaskResourceRequests

from k8s_backend.spark import session

GPU_DISCOVERY = "/opt/spark/examples/src/main/scripts/getGpusResources.sh"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--master", default=os.environ.get("K8S_BACKEND_MASTER", "pyk8s://local"))
    parser.add_argument("--gpus", type=int, default=0, help="GPUs per executor of the custom profile")
    args = parser.parse_args()
    conf = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.initialExecutors": "1",
        "spark.dynamicAllocation.maxExecutors": "2",
        "spark.executor.memory": "512m",
        "spark.kubernetes.container.image": os.environ.get("SPARK_IMAGE", "apache/spark:{{SPARK_VERSION}}"),
    }
    spark = session(args.master, conf, app_name="ResourceProfiles")
    try:
        executors = ExecutorResourceRequests().cores(2).memory("1g").memoryOverhead("512m")
        tasks = TaskResourceRequests().cpus(1)
        if args.gpus:
            executors = executors.resource("gpu", args.gpus, GPU_DISCOVERY, "nvidia.com")
            tasks = tasks.resource("gpu", 1)
        profile = ResourceProfileBuilder().require(executors).require(tasks).build
        wanted = {name: request.amount for name, request in profile.executorResources.items()}
        print(f"custom resource profile {profile.id}: {wanted}")

        data = spark.sparkContext.parallelize(range(1_000), 4)
        print("default profile sum:", data.sum())
        print("custom profile sum: ", data.withResources(profile).map(lambda x: x * 2).sum())

        store = spark.sparkContext._jsc.sc().statusStore()
        summaries = store.executorList(False)
        for i in range(summaries.size()):
            summary = summaries.apply(i)
            if summary.id() != "driver":
                print(
                    f"executor {summary.id()}: profile {summary.resourceProfileId()}, "
                    f"{summary.totalCores()} cores, active={summary.isActive()}"
                )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
