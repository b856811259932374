"""YuniKorn: the labels and annotations that put executors in a gang (task group) with placeholders.

YuniKorn reserves ``minMember`` placeholder pods of ``minResource`` each before the real executors bind.
``minResource`` is taken from the built Spark container's requests, so it includes memory overhead and
PySpark memory (spark-operator left PySpark memory out, kubeflow/spark-operator#2176).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from k8s_backend.kube.port import Obj
from k8s_backend.pods.step import SparkPod, StepContext

APP_ID = "yunikorn.apache.org/app-id"
QUEUE = "yunikorn.apache.org/queue"
TASK_GROUPS = "yunikorn.apache.org/task-groups"
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
POLICY_PARAMETERS = "yunikorn.apache.org/schedulingPolicyParameters"
SCHEDULER_NAME = "yunikorn"


@attrs.frozen
class YuniKornSettings:
    min_member: int
    queue: str = ""
    task_group: str = "spark-executor"
    placeholder_timeout: float = 300.0
    style: str = "Soft"  # Soft: go on as a normal application on timeout; Hard: fail


def task_group(settings: YuniKornSettings, pod: Obj, container: Obj) -> dict[str, Any]:
    """One task group describing the executors, sized like the real executor container."""
    spec = pod.get("spec") or {}
    requests = dict(((container.get("resources") or {}).get("requests")) or {})
    limits = (container.get("resources") or {}).get("limits") or {}
    for name, amount in limits.items():
        if "/" in name:  # extended resources (GPUs) are limits-only in the Spark pod
            requests.setdefault(name, amount)
    group: dict[str, Any] = {
        "name": settings.task_group,
        "minMember": settings.min_member,
        "minResource": requests,
    }
    for key in ("nodeSelector", "tolerations", "affinity"):
        if spec.get(key):
            group[key] = spec[key]
    return group


class YuniKornStep:
    """Adds YuniKorn's application, queue and gang annotations to every executor pod."""

    def __init__(self, settings: YuniKornSettings) -> None:
        self._settings = settings

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        out = pod.copy()
        metadata = out.pod.setdefault("metadata", {})
        labels = metadata.setdefault("labels", {})
        annotations = metadata.setdefault("annotations", {})
        labels[APP_ID] = ctx.app_id
        annotations[APP_ID] = ctx.app_id
        if self._settings.queue:
            labels[QUEUE] = self._settings.queue
            annotations[QUEUE] = self._settings.queue
        annotations[TASK_GROUP_NAME] = self._settings.task_group
        annotations[TASK_GROUPS] = json.dumps([task_group(self._settings, out.pod, out.container)])
        annotations[POLICY_PARAMETERS] = (
            f"placeholderTimeoutInSeconds={int(self._settings.placeholder_timeout)} "
            f"gangSchedulingStyle={self._settings.style}"
        )
        out.pod.setdefault("spec", {})["schedulerName"] = SCHEDULER_NAME
        return out

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
