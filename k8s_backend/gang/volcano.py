"""Volcano: one PodGroup per application, owned by the driver pod; executors join it by annotation."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import yaml

from k8s_backend.errors import ConfigError
from k8s_backend.kube import quantity
from k8s_backend.kube.port import POD_GROUPS, Obj
from k8s_backend.pods.step import SparkPod, StepContext
from k8s_backend.pods.yaml_bounded import YamlLimitError, read_bounded_yaml

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_NAME = "volcano"
TEMPLATE_KEY = "spark.kubernetes.scheduler.volcano.podGroupTemplateFile"


def pod_group_name(app_id: str) -> str:
    return f"{app_id}-podgroup"


@attrs.frozen
class VolcanoSettings:
    min_member: int
    queue: str = ""
    priority_class_name: str = ""
    template_file: str | None = None


def multiply_quantities(quantities: Mapping[str, str], times: int) -> dict[str, str]:
    """``{"memory": "896Mi", "cpu": "500m"}`` x 3 -> ``{"memory": "2688Mi", "cpu": "1500m"}``.

    ValueError naming the resource when a quantity is not one the API server accepts, or is negative.
    """
    return {name: quantity.multiply(str(value), times, field=name) for name, value in quantities.items()}


def load_template(path: str) -> Obj:
    """A PodGroup template (YAML or JSON); ConfigError naming the key when unusable."""
    try:
        loaded = read_bounded_yaml(path)
    except OSError as error:
        raise ConfigError(
            f"{TEMPLATE_KEY}={path} cannot be read: {error}", key=TEMPLATE_KEY, value=path
        ) from None
    except YamlLimitError as error:
        raise ConfigError(f"{TEMPLATE_KEY}={path}: {error}", key=TEMPLATE_KEY, value=path) from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{TEMPLATE_KEY}={path} is not valid YAML: {error}", key=TEMPLATE_KEY, value=path
        ) from None
    if not isinstance(loaded, dict) or loaded.get("kind", "PodGroup") != "PodGroup":
        raise ConfigError(
            f"{TEMPLATE_KEY}={path} must hold a PodGroup object (kind: PodGroup)",
            key=TEMPLATE_KEY,
            value=path,
        )
    return loaded


def build_pod_group(
    settings: VolcanoSettings,
    *,
    app_id: str,
    namespace: str,
    min_resources: Mapping[str, str],
    driver_pod: Obj | None,
) -> Obj:
    """The PodGroup: the template's minMember and minResources win when set; queue and priority override."""
    body: dict[str, Any] = (
        copy.deepcopy(load_template(settings.template_file)) if settings.template_file else {}
    )
    body["apiVersion"] = POD_GROUPS.api_version
    body["kind"] = "PodGroup"
    metadata = body.setdefault("metadata", {})
    metadata["name"] = pod_group_name(app_id)
    metadata["namespace"] = namespace
    metadata.setdefault("labels", {})["spark-app-selector"] = app_id
    if driver_pod is not None:
        meta = driver_pod["metadata"]
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True}
        ]
    spec = body.setdefault("spec", {})
    spec.setdefault("minMember", settings.min_member)
    if min_resources:
        spec.setdefault("minResources", dict(min_resources))
    if settings.queue:
        spec["queue"] = settings.queue
    if settings.priority_class_name:
        spec["priorityClassName"] = settings.priority_class_name
    return body


class VolcanoStep:
    """Puts every executor pod in the application's PodGroup and hands it to the Volcano scheduler."""

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        out = pod.copy()
        annotations = out.pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[GROUP_NAME_ANNOTATION] = pod_group_name(ctx.app_id)
        out.pod.setdefault("spec", {})["schedulerName"] = SCHEDULER_NAME
        return out

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
