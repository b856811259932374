"""Configurations, requests and accessors shared by the pod builder tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend.conf.model import ExecutorPodConf, KubernetesConf, ResourceProfile
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.pods.step import FeatureStep, SparkPod, StepContext

APP_ID = "spark-app-id"
PREFIX = "base"
IMAGE = "executor-image"
DRIVER_URL = "spark://CoarseGrainedScheduler@localhost:7098"
CONFIG_MAP = "spark-exec-abc123-conf-map"
FACTS = DriverFacts(spark_user="tester", spark_version="4.3.0")
DRIVER_POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "driver-pod", "uid": "driver-uid"},
    "spec": {"nodeName": "some-node"},
    "status": {"hostIP": "192.168.99.100"},
}


def make_conf(
    *,
    properties: Mapping[str, str] | None = None,
    app_name: str = "spark",
    **executor: Any,
) -> KubernetesConf:
    """A configuration with an executor image and the given ExecutorPodConf fields."""
    executor.setdefault("image", IMAGE)
    return KubernetesConf(
        app_name=app_name,
        executor=ExecutorPodConf(**executor),
        spark_properties=dict(properties or {}),
    )


def with_conf(conf: KubernetesConf, **changes: Any) -> KubernetesConf:
    return attrs.evolve(conf, **changes)


def make_request(
    conf: KubernetesConf,
    *,
    executor_id: int = 1,
    profile: ResourceProfile | None = None,
    prefix: str = PREFIX,
    driver_pod: Obj | None = DRIVER_POD,
    config_map_name: str | None = CONFIG_MAP,
    auth_secret_name: str | None = None,
) -> ExecutorPodRequest:
    return ExecutorPodRequest(
        executor_id=executor_id,
        app_id=APP_ID,
        driver_url=DRIVER_URL,
        pod_name_prefix=prefix,
        resource_profile=profile if profile is not None else conf.executor.default_profile,
        driver_pod=driver_pod,
        config_map_name=config_map_name,
        auth_secret_name=auth_secret_name,
    )


def make_ctx(conf: KubernetesConf, **request: Any) -> StepContext:
    req = make_request(conf, **request)
    return StepContext(conf=conf, request=req, pod_name=f"{req.pod_name_prefix}-exec-{req.executor_id}")


def run_step(
    step: FeatureStep, conf: KubernetesConf, pod: SparkPod | None = None, **request: Any
) -> SparkPod:
    return step.configure_pod(pod if pod is not None else SparkPod(), make_ctx(conf, **request))


def build(
    conf: KubernetesConf,
    *,
    facts: DriverFacts = FACTS,
    steps: list[FeatureStep] | None = None,
    **request: Any,
) -> ExecutorPodSpec:
    return ExecutorPodBuilder(conf, steps, facts=facts).build(make_request(conf, **request))


def spark_container(pod: Obj, name: str = "spark-kubernetes-executor") -> Obj:
    matches = [c for c in pod["spec"]["containers"] if c["name"] == name]
    assert len(matches) == 1, [c["name"] for c in pod["spec"]["containers"]]
    return matches[0]


def env_values(container: Obj) -> dict[str, Any]:
    """Env vars by name: the value, or the valueFrom source."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def env_names(container: Obj) -> list[str]:
    return [e["name"] for e in container.get("env", [])]


def volume_names(pod: Obj) -> list[str]:
    return [v["name"] for v in pod.get("spec", {}).get("volumes", [])]


def mount_paths(container: Obj) -> dict[str, str]:
    return {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
