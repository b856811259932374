"""What a real API server refuses, or rewrites, while it *decodes* a request body, before validation.

These are 400 BadRequest answers, not 422 Invalid: the body cannot be read as the kind at all.

- A custom resource (a group other than the core API and not built in) must name its ``apiVersion``
  and ``kind``: the server reads it as unstructured data, which has no type of its own. A built-in
  kind's body may leave them out (the URL says what it is).
- A pod's int64 fields (``terminationGracePeriodSeconds``, ``activeDeadlineSeconds``) must fit.
- A pod's container resource quantities must parse. As Go's ``Quantity.UnmarshalJSON`` does, blanks
  around the text are ignored (``" 1Gi"`` is stored as ``"1Gi"``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from k8s_backend.kube.port import PODS, ApiError, Obj, Resource
from k8s_backend.kube.quantity import QUANTITY_PATTERN, parse_quantity
from k8s_backend.memkube.errors import bad_request
from k8s_backend.memkube.store import res_key

# Groups whose kinds the API server compiles in (a PodGroup's scheduling.volcano.sh is not among them).
_BUILT_IN_GROUPS = frozenset(
    {"", "apps", "batch", "policy", "scheduling.k8s.io", "coordination.k8s.io", "networking.k8s.io",
     "rbac.authorization.k8s.io", "storage.k8s.io", "autoscaling", "discovery.k8s.io", "events.k8s.io",
     "node.k8s.io", "certificates.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
     "resource.k8s.io", "flowcontrol.apiserver.k8s.io"}
)  # fmt: skip
_QUANTITY_SHAPE = re.compile(QUANTITY_PATTERN)


def decode(resource: Resource, body: Obj) -> Obj:
    """``body`` as the server reads it (quantities trimmed), or the 400 the server answers."""
    if resource.group not in _BUILT_IN_GROUPS:
        _check_type_fields(resource, body)
    if res_key(resource) == res_key(PODS):
        _decode_pod_quantities(body)
        _decode_pod_integers(body)
    return body


def _check_type_fields(resource: Resource, body: Obj) -> None:
    if not body.get("kind"):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"Object 'Kind' is missing in '{json.dumps(body)}'"
        )
    if not body.get("apiVersion"):
        raise bad_request(
            f"the API version in the data () does not match the expected API version ({resource.api_version})"
        )


def _decode_pod_quantities(pod: Obj) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for list_name in ("initContainers", "containers", "ephemeralContainers"):
        containers = spec.get(list_name)
        if not isinstance(containers, list):
            continue
        for container in containers:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict):
                continue
            for section in ("limits", "requests"):
                values = resources.get(section)
                if isinstance(values, dict):
                    for name, quantity in list(values.items()):
                        values[name] = _decoded_quantity(quantity)


def _decoded_quantity(quantity: Any) -> Any:
    text = quantity.strip() if isinstance(quantity, str) else quantity
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise _cannot_decode(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    try:
        parse_quantity(text)
    except ValueError:
        # The server tells a text of the right shape with an unknown suffix ("1K") from anything else.
        if isinstance(text, str) and _QUANTITY_SHAPE.match(text):
            raise _cannot_decode("unable to parse quantity's suffix") from None
        raise _cannot_decode(f"quantities must match the regular expression '{QUANTITY_PATTERN}'") from None
    return text


_INT64 = range(-(2**63), 2**63)
_POD_INT64_FIELDS = ("terminationGracePeriodSeconds", "activeDeadlineSeconds")


def _decode_pod_integers(pod: Obj) -> None:
    """int64 fields of a pod's spec must hold a whole number that fits (Go's JSON decoder)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for field in _POD_INT64_FIELDS:
        value = spec.get(field)
        if value is None or isinstance(value, bool):
            continue
        fits = isinstance(value, int) and value in _INT64
        whole = isinstance(value, float) and value.is_integer() and int(value) in _INT64
        if not (fits or whole):
            where = f"Go struct field PodSpec.spec.{field} of type int64"
            raise _cannot_decode(f"json: cannot unmarshal number {value} into {where}")


def _cannot_decode(reason: str) -> ApiError:
    return bad_request(f'Pod in version "v1" cannot be handled as a Pod: {reason}')
