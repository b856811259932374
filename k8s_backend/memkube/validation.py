"""The API server's validation, for the kinds InMemoryKubernetes knows: names, labels, pods, config maps.

Only what a client of the library can get wrong is checked (the server checks far more); every check
answers with the server's wording so tests read like logs from a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from k8s_backend.kube.labels import (
    annotations_size_errors,
    extended_resource_name_errors,
    label_key_errors,
    label_value_errors,
)
from k8s_backend.kube.names import config_key_errors, dns1123_label_errors, dns1123_subdomain_errors
from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, PVCS, SERVICES, Obj, Resource
from k8s_backend.kube.quantity import QUANTITY_PATTERN, parse_quantity
from k8s_backend.memkube.errors import DUPLICATE, FORBIDDEN, INVALID, REQUIRED, TOO_LONG, FieldError
from k8s_backend.memkube.validation_paths import claim_errors, pod_path_errors

# The name rules (patterns, limits, the server's messages) live in kube/names.py.
NameCheck = Callable[[str], list[str]]


def _same(a: Resource, b: Resource) -> bool:
    return (a.group, a.plural) == (b.group, b.plural)


def name_check(resource: Resource) -> NameCheck:
    """The rule object names of this kind follow."""
    # Service names are DNS-1123 labels since RelaxedServiceNameValidation (on by default in 1.37):
    # "1svc" is accepted, as the real API server showed.
    if _same(resource, SERVICES) or _same(resource, NAMESPACES):
        return dns1123_label_errors
    return dns1123_subdomain_errors


def validate_object(resource: Resource, obj: Obj) -> list[FieldError]:
    """Everything wrong with an object about to be stored (on create and on every update)."""
    meta = obj.get("metadata", {})
    errors = [
        FieldError("metadata.name", INVALID, meta.get("name", ""), problem)
        for problem in name_check(resource)(meta.get("name", ""))
    ]
    if resource.namespaced:
        namespace = meta.get("namespace", "")
        errors += [
            FieldError("metadata.namespace", INVALID, namespace, p) for p in dns1123_label_errors(namespace)
        ]
    errors += _validate_string_map(meta.get("labels"), "metadata.labels", check_values=True)
    errors += _validate_string_map(meta.get("annotations"), "metadata.annotations", check_values=False)
    errors += _validate_annotations_size(meta.get("annotations"))
    errors += _validate_owner_references(meta.get("ownerReferences"))
    if _same(resource, PODS):
        errors += _validate_pod_spec(obj.get("spec"))
        if isinstance(obj.get("spec"), dict):
            errors += pod_path_errors(obj["spec"])
    elif _same(resource, PVCS):
        errors += claim_errors(obj)
    elif _same(resource, CONFIG_MAPS):
        errors += _validate_config_map(obj)
    return errors


def _validate_string_map(mapping: Any, path: str, *, check_values: bool) -> list[FieldError]:
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        return [FieldError(path, INVALID, str(mapping), "must be a map of strings to strings")]
    errors: list[FieldError] = []
    for key, value in mapping.items():
        errors += [FieldError(path, INVALID, key, problem) for problem in label_key_errors(str(key))]
        if not isinstance(value, str):
            errors.append(FieldError(f"{path}[{key}]", INVALID, value, "must be a string"))
        elif check_values:
            errors += [FieldError(path, INVALID, value, problem) for problem in label_value_errors(value)]
    return errors


def _validate_annotations_size(annotations: Any) -> list[FieldError]:
    if not isinstance(annotations, dict):
        return []
    sized = {str(k): str(v) for k, v in annotations.items()}
    return [FieldError("metadata.annotations", TOO_LONG, detail=p) for p in annotations_size_errors(sized)]


def _validate_owner_references(refs: Any) -> list[FieldError]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [FieldError("metadata.ownerReferences", INVALID, str(refs), "must be a list")]
    errors: list[FieldError] = []
    for i, ref in enumerate(refs):
        for field in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(field):
                errors.append(FieldError(f"metadata.ownerReferences[{i}].{field}", REQUIRED))
    return errors


_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _validate_pod_spec(spec: Any) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [FieldError("spec", REQUIRED)]
    containers = spec.get("containers")
    if not containers or not isinstance(containers, list):
        return [FieldError("spec.containers", REQUIRED)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for list_name in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(list_name) or []):
            errors += _validate_container(container, f"spec.{list_name}[{i}]", seen)
    return errors


def _validate_container(container: Any, path: str, seen: set[str]) -> list[FieldError]:
    if not isinstance(container, dict):
        return [FieldError(path, INVALID, str(container), "must be an object")]
    errors: list[FieldError] = []
    name = container.get("name")
    if not name:
        errors.append(FieldError(f"{path}.name", REQUIRED))
    else:
        errors += [FieldError(f"{path}.name", INVALID, name, p) for p in dns1123_label_errors(str(name))]
        if name in seen:
            errors.append(FieldError(f"{path}.name", DUPLICATE, name))
        seen.add(str(name))
    image = container.get("image")
    if not image:
        errors.append(FieldError(f"{path}.image", REQUIRED))
    elif isinstance(image, str) and image != image.strip():
        errors.append(
            FieldError(f"{path}.image", INVALID, image, "must not have leading or trailing whitespace")
        )
    resources = container.get("resources") or {}
    parsed: dict[str, dict[str, Any]] = {}
    for section in ("limits", "requests"):
        values = resources.get(section) or {}
        parsed[section] = {}
        for resource_name, quantity in values.items():
            field = f"{path}.resources.{section}[{resource_name}]"
            errors += _validate_resource_name(str(resource_name), field)
            try:
                amount = parse_quantity(quantity)
            except ValueError:
                pattern = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
                errors.append(FieldError(field, INVALID, str(quantity), pattern))
                continue
            if amount < 0:
                errors.append(FieldError(field, INVALID, str(quantity), "must be greater than or equal to 0"))
            else:
                parsed[section][resource_name] = amount
    for resource_name, request in parsed["requests"].items():
        limit = parsed["limits"].get(resource_name)
        if limit is not None and request > limit:
            shown = resources["requests"][resource_name]
            limit_text = resources["limits"][resource_name]
            errors.append(
                FieldError(
                    f"{path}.resources.requests",
                    INVALID,
                    str(shown),
                    f"must be less than or equal to {resource_name} limit of {limit_text}",
                )
            )
    return errors


def _validate_resource_name(name: str, field: str) -> list[FieldError]:
    if name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-"):
        return []
    if "/" in name:  # extended resources, by the rule of kube/labels.py
        return [FieldError(field, INVALID, name, p) for p in extended_resource_name_errors(name)]
    return [FieldError(field, INVALID, name, "must be a standard resource for containers")]


def _validate_config_map(obj: Obj) -> list[FieldError]:
    errors: list[FieldError] = []
    keys: set[str] = set()
    for section in ("data", "binaryData"):
        values = obj.get(section) or {}
        if not isinstance(values, dict):
            errors.append(FieldError(section, INVALID, str(values), "must be a map of strings to strings"))
            continue
        for key, value in values.items():
            errors += [FieldError(f"{section}[{key}]", INVALID, key, p) for p in config_key_errors(key)]
            if key in keys:
                errors.append(FieldError(f"{section}[{key}]", DUPLICATE, key))
            keys.add(key)
            if not isinstance(value, str):
                errors.append(FieldError(f"{section}[{key}]", INVALID, value, "must be a string"))
    return errors


# --- updates --------------------------------------------------------------------------------------

_POD_MUTABLE_SPEC = (
    "activeDeadlineSeconds",
    "tolerations",
    "terminationGracePeriodSeconds",
    "schedulingGates",
)


def _pod_spec_without_mutable_fields(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    reduced = {k: v for k, v in spec.items() if k not in _POD_MUTABLE_SPEC}
    for list_name in ("containers", "initContainers"):
        if isinstance(reduced.get(list_name), list):
            reduced[list_name] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
                for c in reduced[list_name]
            ]
    return reduced


def validate_update(resource: Resource, old: Obj, new: Obj) -> list[FieldError]:
    """What an update may not change (immutable fields), beyond :func:`validate_object`."""
    errors: list[FieldError] = []
    old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
    if new_meta.get("uid", old_meta.get("uid")) != old_meta.get("uid"):
        errors.append(FieldError("metadata.uid", INVALID, new_meta.get("uid"), "field is immutable"))
    if old_meta.get("deletionTimestamp"):
        added = [f for f in new_meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
        if added:
            errors.append(
                FieldError(
                    "metadata.finalizers",
                    FORBIDDEN,
                    detail=f"no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {added}",
                )
            )
    if _same(resource, PODS) and _pod_spec_without_mutable_fields(old.get("spec")) != (
        _pod_spec_without_mutable_fields(new.get("spec"))
    ):
        errors.append(
            FieldError(
                "spec",
                FORBIDDEN,
                detail="pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
                "(only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to "
                "be set to 1 if it was previously negative)",
            )
        )
    return errors
