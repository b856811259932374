"""Executor pod templates (``spark.kubernetes.executor.podTemplateFile``).

The template is the starting pod: every feature step edits it, and settings Spark makes win over the
template's. Its Spark container is chosen by ``spark.kubernetes.executor.podTemplateContainerName``
(else the first container); other containers (sidecars) stay in the pod.
"""

from __future__ import annotations

import copy
import logging
import urllib.parse
from typing import Any

import attrs
import yaml

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.yaml_bounded import YamlLimitError, read_bounded_yaml

log = logging.getLogger(__name__)

TEMPLATE_KEY = "spark.kubernetes.executor.podTemplateFile"

@attrs.frozen
class PodTemplate:
    """A loaded template: the pod without its Spark container, that container, and where it stood."""

    pod: Obj
    container: Obj
    container_index: int = 0

    def spark_pod(self) -> SparkPod:
        """A fresh, independent copy to build one executor pod from."""
        return SparkPod(copy.deepcopy(self.pod), copy.deepcopy(self.container))


EMPTY_TEMPLATE = PodTemplate(pod={}, container={})


def _fail(
    path: str, problem: str, cause: BaseException | None = None, *, key: str = TEMPLATE_KEY
) -> ConfigError:
    role = "driver" if ".driver." in key else "executor"
    message = f"Could not load the {role} pod template {key}={path!r}: {problem}"
    error = ConfigError(message, key=key, value=path)
    error.__cause__ = cause
    return error


def _local_path(path: str, key: str) -> str:
    parsed = urllib.parse.urlparse(path)
    if parsed.scheme in ("", "file", "local"):
        return urllib.parse.unquote(parsed.path) if parsed.scheme else path
    if len(parsed.scheme) == 1:  # a Windows drive letter, e.g. C:\templates\exec.yaml
        return path
    raise _fail(
        path, f"only local files are supported (got a {parsed.scheme}:// URI); copy it locally", key=key
    )


def read_template_file(path: str, key: str = TEMPLATE_KEY) -> Obj:
    """Read and check a pod template (YAML or JSON); errors name ``key``, the property that gave it."""
    local = _local_path(path, key)
    try:
        document: Any = read_bounded_yaml(local)
    except OSError as exc:
        raise _fail(path, f"cannot read it ({exc.strerror or exc})", exc, key=key) from exc
    except YamlLimitError as exc:
        raise _fail(path, str(exc), exc, key=key) from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise _fail(path, f"it is not valid YAML or JSON ({exc})", exc, key=key) from exc
    if not isinstance(document, dict):
        raise _fail(path, f"expected a Pod object, got {type(document).__name__}", key=key)
    kind = document.get("kind", "Pod")
    if kind != "Pod":
        raise _fail(path, f"expected kind: Pod, got kind: {kind}", key=key)
    for field in ("metadata", "spec"):
        if document.get(field) is not None and not isinstance(document[field], dict):
            raise _fail(path, f"{field} must be a mapping", key=key)
    containers = (document.get("spec") or {}).get("containers")
    if containers is not None and (
        not isinstance(containers, list) or not all(isinstance(c, dict) for c in containers)
    ):
        raise _fail(path, "spec.containers must be a list of containers", key=key)
    return document


def select_spark_container(pod: Obj, container_name: str | None) -> PodTemplate:
    """Split the template into the Spark container and the rest (Spark's selectSparkContainer)."""
    pod = copy.deepcopy(pod)
    pod.pop("status", None)  # a template describes a pod to create, not an observed one
    spec = pod.get("spec") or {}
    containers: list[Obj] = list(spec.get("containers") or [])
    index = 0
    if container_name is not None:
        matches = [i for i, c in enumerate(containers) if c.get("name") == container_name]
        if len(matches) == 1:
            index = matches[0]
        elif containers:
            log.warning(
                "Container %r not found (or not unique) in the executor pod template; using the first "
                "container, %r, as the Spark container",
                container_name,
                containers[0].get("name"),
            )
    if not containers:
        return PodTemplate(pod=pod, container={}, container_index=0)
    container = containers.pop(index)
    if "spec" in pod:
        pod["spec"]["containers"] = containers
    return PodTemplate(pod=pod, container=container, container_index=index)


def load_pod_template(
    path: str | None, container_name: str | None, namespace: str | None = None
) -> PodTemplate:
    """The template configured for executors, or an empty one.

    With ``namespace`` (the application's), a template naming another namespace is refused: the API
    server refuses to create a pod whose ``metadata.namespace`` is not the one it is created in.
    """
    if not path:
        return EMPTY_TEMPLATE
    template = select_spark_container(read_template_file(path), container_name)
    own = (template.pod.get("metadata") or {}).get("namespace")
    if namespace is not None and own not in (None, "", namespace):
        raise _fail(
            path,
            f"its metadata.namespace is {own!r} but executor pods are created in {namespace!r} "
            "(spark.kubernetes.namespace); remove metadata.namespace from the template or set "
            "spark.kubernetes.namespace to it",
        )
    return template
