"""The driver pod template (``spark.kubernetes.driver.podTemplateFile``): as in Spark, the pod the
driver steps start from, with the Spark container taken out of it (and put back at its index after
them)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import section
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.template import read_template_file, select_spark_container

DRIVER_TEMPLATE_KEY = "spark.kubernetes.driver.podTemplateFile"
DRIVER_TEMPLATE_CONTAINER_KEY = "spark.kubernetes.driver.podTemplateContainerName"


def load_driver_template(properties: Mapping[str, str]) -> tuple[SparkPod, int]:
    """The template's pod without its Spark container, that container, and its index among the
    template's containers (an empty pod without a template); a :class:`ConfigError` naming the key
    for a template that cannot be used."""
    path = properties.get(DRIVER_TEMPLATE_KEY)
    if not path:
        return SparkPod({}, {}), 0
    loaded = select_spark_container(
        read_template_file(path, key=DRIVER_TEMPLATE_KEY), properties.get(DRIVER_TEMPLATE_CONTAINER_KEY)
    )
    return SparkPod(copy.deepcopy(loaded.pod), copy.deepcopy(loaded.container)), loaded.container_index


def with_spark_container(pod: SparkPod, index: int) -> Obj:
    """The whole pod: the Spark container put back at ``index`` among the template's containers."""
    whole = pod.pod
    spec = section(whole, "spec")
    containers = list(spec.get("containers") or [])
    containers.insert(min(index, len(containers)), pod.container)
    spec["containers"] = containers
    return whole
