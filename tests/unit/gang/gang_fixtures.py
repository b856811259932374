"""Configurations and built executor pods for the gang scheduling tests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.gang.setup import GangSetup, plan_gang
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest

APP_ID = "spark-app-id"
DRIVER_URL = "spark://CoarseGrainedScheduler@driver:7078"
SPARK = "spark-kubernetes-executor"
BASE = {
    "spark.app.name": "gang-app",
    "spark.kubernetes.container.image": "spark:4.3.0",
    "spark.kubernetes.namespace": "batch",
    "spark.executor.instances": "4",
}
FACTS = DriverFacts(spark_user="tester", spark_version="4.3.0")


def conf_of(properties: Mapping[str, str] | None = None) -> KubernetesConf:
    return KubernetesConf.from_spark_conf({**BASE, **(properties or {})})


def builder_of(conf: KubernetesConf, gang: GangSetup | None = None) -> ExecutorPodBuilder:
    return ExecutorPodBuilder(conf, steps=(gang or plan_gang(conf)).steps, facts=FACTS)


def build_pod(properties: Mapping[str, str] | None = None, executor_id: int = 1) -> Obj:
    conf = conf_of(properties)
    request = ExecutorPodRequest(
        executor_id=executor_id,
        app_id=APP_ID,
        driver_url=DRIVER_URL,
        pod_name_prefix="gang-app",
        resource_profile=conf.executor.default_profile,
    )
    return builder_of(conf).build(request).pod


def spark_container(pod: Obj) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == SPARK)
    return found


def annotations_of(pod: Obj) -> dict[str, str]:
    found: dict[str, str] = pod["metadata"].get("annotations") or {}
    return found


def task_groups(pod: Obj) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads(annotations_of(pod)["yunikorn.apache.org/task-groups"])
    return groups
