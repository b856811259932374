"""A container's environment as the kubelet computes it: values, ``$(VAR)`` expansion, downward API
fieldRefs and resourceFieldRefs, ConfigMap and Secret references (``valueFrom`` and ``envFrom``)."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from k8s_backend.kube.quantity import cpu_millis, memory_bytes, parse_quantity
from k8s_backend.local.kubelet.nodes import Resources

Obj = dict[str, Any]

Lookup = Callable[[str, str, str], "Obj | None"]
"""``lookup(kind, namespace, name)`` → the ConfigMap or Secret object, or None if it does not exist."""


class ContainerConfigError(Exception):
    """The container cannot be configured yet (a referenced ConfigMap, Secret or key is missing).

    The kubelet reports it as ``waiting.reason=CreateContainerConfigError`` and tries again later.
    """


class ContainerStartError(Exception):
    """The container's command cannot be started here; reported as ``terminated.reason=StartError``."""


@attrs.frozen
class PodRuntime:
    """Facts about a bound pod that only the kubelet knows (the downward API's status fields)."""

    pod_ip: str = "127.0.0.1"
    host_ip: str = "127.0.0.1"
    node_name: str = ""
    node_allocatable: Resources = attrs.field(factory=Resources)


_EXPANSION = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
_LABEL_REF = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: known names are replaced, ``$$`` is a literal ``$``,
    unknown references stay as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _EXPANSION.sub(replace, value)


def field_value(pod: Obj, path: str, runtime: PodRuntime) -> str:
    """The value of a downward-API ``fieldRef.fieldPath`` for this pod."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple: dict[str, Callable[[], str]] = {
        "metadata.name": lambda: str(meta.get("name", "")),
        "metadata.namespace": lambda: str(meta.get("namespace", "")),
        "metadata.uid": lambda: str(meta.get("uid", "")),
        "spec.nodeName": lambda: runtime.node_name or str(spec.get("nodeName", "")),
        "spec.serviceAccountName": lambda: str(spec.get("serviceAccountName", "")),
        "status.podIP": lambda: runtime.pod_ip,
        "status.podIPs": lambda: runtime.pod_ip,
        "status.hostIP": lambda: runtime.host_ip,
        "status.hostIPs": lambda: runtime.host_ip,
    }
    if path in simple:
        return simple[path]()
    match = _LABEL_REF.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    raise ContainerConfigError(f"fieldRef: unsupported fieldPath {path!r} in pod {meta.get('name')!r}")


def resource_field_value(pod: Obj, own: Obj, ref: Obj, runtime: PodRuntime) -> str:
    """The value of a ``resourceFieldRef`` (``limits.memory`` etc.), scaled by its divisor and rounded up.

    An unset limit reads as the node's allocatable amount, as on a real node.
    """
    container_name = ref.get("containerName") or own.get("name")
    resource = str(ref.get("resource", ""))
    container: Obj | None = own
    if container_name != own.get("name"):
        containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        container = containers.get(container_name)
    if container is None or "." not in resource:
        raise ContainerConfigError(
            f"resourceFieldRef: cannot resolve {resource!r} of container {container_name!r}"
        )
    kind, name = resource.split(".", 1)
    section = ((container.get("resources") or {}).get(kind)) or {}
    raw = section.get(name)
    divisor = parse_quantity(ref.get("divisor", "1"), field="resourceFieldRef divisor")
    if name == "cpu":
        millis = cpu_millis(raw) if raw is not None else runtime.node_allocatable.cpu_millis
        return str(max(1, math.ceil(millis / (divisor * 1000))))
    if name == "memory":
        amount = memory_bytes(raw) if raw is not None else runtime.node_allocatable.memory_bytes
        return str(math.ceil(amount / divisor))
    if raw is None:
        return "0"
    return str(math.ceil(parse_quantity(raw) / divisor))


def object_data(obj: Obj, kind: str) -> dict[str, str]:
    """The key→text data of a ConfigMap or Secret (Secret values are base64 in ``data``)."""
    if kind == "Secret":
        data = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()}
        data.update(obj.get("stringData") or {})
        return data
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


def _referenced(lookup: Lookup, kind: str, namespace: str, ref: Obj) -> dict[str, str] | None:
    name = str(ref.get("name", ""))
    obj = lookup(kind, namespace, name)
    if obj is None:
        if ref.get("optional"):
            return None
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return object_data(obj, kind)


def resolve_env(pod: Obj, container: Obj, runtime: PodRuntime, lookup: Lookup) -> dict[str, str]:
    """The container's environment variables, in the order and with the precedence the kubelet uses."""
    namespace = str((pod.get("metadata") or {}).get("namespace", "default"))
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix", ""))
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if key in source:
                data = _referenced(lookup, kind, namespace, source[key]) or {}
                env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        name = str(var.get("name", ""))
        if "value" in var or "valueFrom" not in var:
            value = var.get("value")
            env[name] = expand(str(value), env) if value is not None else ""
            continue
        source = var["valueFrom"] or {}
        if "fieldRef" in source:
            env[name] = field_value(pod, str(source["fieldRef"].get("fieldPath", "")), runtime)
        elif "resourceFieldRef" in source:
            env[name] = resource_field_value(pod, container, source["resourceFieldRef"], runtime)
        else:
            for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                if key not in source:
                    continue
                ref = source[key]
                found = _referenced(lookup, kind, namespace, ref)
                if found is None:
                    break
                data = found
                if ref.get("key") not in data:
                    if ref.get("optional"):
                        break
                    raise ContainerConfigError(
                        f"couldn't find key {ref.get('key')} in {kind} {namespace}/{ref.get('name')}"
                    )
                env[name] = data[str(ref["key"])]
                break
    return env
