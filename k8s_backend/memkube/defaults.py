"""What a real API server fills in or rewrites in an object it stores, done the same way by the fake.

Found by running the contract tests against a real kube-apiserver (tests/contract, ``real`` target):

- empty ``metadata.labels`` and ``metadata.annotations`` are dropped (``omitempty``);
- quantities (of pods' containers and of claims) are stored in their canonical form (``1000m`` ->
  ``1``, ``1024Mi`` -> ``1Gi``, ``0.5`` -> ``500m``), as ``resource.Quantity.String()`` writes them;
- a pod gets the defaults of ``SetDefaults_Pod`` and of the ServiceAccount admission plugin (restart
  and DNS policies, scheduler, grace period, service account, image pull policy, termination message
  path), requests default to limits, and ``status.qosClass`` is set.

Not done (the fake does not have these): the projected service-account token volume, default
tolerations, priority.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from k8s_backend.kube.port import PODS, PVCS, Obj, Resource
from k8s_backend.kube.quantity import parse_quantity

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_QOS_RESOURCES = ("cpu", "memory")


def omit_empty_maps(obj: Obj) -> None:
    """Drop empty ``labels`` and ``annotations``: the server omits empty maps."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for field in ("labels", "annotations"):
            if meta.get(field) == {}:
                del meta[field]


def canonical_quantity(value: object) -> object:
    """The quantity as the API server writes it back; anything that is not a quantity as it is."""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return value
    try:
        amount = parse_quantity(value)
    except ValueError:
        return value  # validation reports it
    text = str(value)
    if amount == 0:
        return "0"
    binary = text.endswith(_BINARY[1:])
    exponent_form = "e" in text.lower() and not binary
    if binary and abs(amount) >= 1024 and amount == amount.to_integral_value():
        return _binary(amount)
    return _decimal(amount, exponent_form)


def _binary(amount: Decimal) -> str:
    number, power = int(amount), 0
    while power < len(_BINARY) - 1 and number % 1024 == 0:
        number //= 1024
        power += 1
    return f"{number}{_BINARY[power]}"


def _decimal(amount: Decimal, exponent_form: bool) -> str:
    sign, digits, exponent = amount.normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)))
    shift = exponent % 3  # bring the exponent down to a multiple of 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    while exponent > 18:  # beyond E: more digits
        mantissa, exponent = mantissa * 1000, exponent - 3
    text = f"{'-' if sign else ''}{mantissa}"
    if exponent_form:
        return text if exponent == 0 else f"{text}e{exponent}"
    return text + _DECIMAL[exponent]


def apply_defaults(resource: Resource, obj: Obj) -> None:
    """Fill in what the API server fills in on create (``obj`` is changed in place)."""
    omit_empty_maps(obj)
    if (resource.group, resource.plural) != (PODS.group, PODS.plural):
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for field, default in (
        ("restartPolicy", "Always"),
        ("dnsPolicy", "ClusterFirst"),
        ("schedulerName", "default-scheduler"),
        ("terminationGracePeriodSeconds", 30),
        ("securityContext", {}),
        ("enableServiceLinks", True),
    ):
        spec.setdefault(field, default)
    # The ServiceAccount admission plugin (the deprecated serviceAccount field mirrors it).
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account
    containers = [
        c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)
    ]
    for container in containers:
        _default_container(container)
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        status["qosClass"] = qos_class(containers)


def canonical_resources(resource: Resource, obj: Obj) -> None:
    """Write the quantities of a pod's containers and of a claim's resources in canonical form (on
    create and on every update)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if (resource.group, resource.plural) == (PVCS.group, PVCS.plural):
        _canonical_sections(spec.get("resources"))
        return
    if (resource.group, resource.plural) != (PODS.group, PODS.plural):
        return
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _canonical_sections(container.get("resources"))


def _canonical_sections(resources: object) -> None:
    if not isinstance(resources, dict):
        return
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, dict):
            resources[section] = {name: canonical_quantity(q) for name, q in values.items()}


def _default_container(container: dict[str, Any]) -> None:
    image = str(container.get("image") or "")
    untagged = ":" not in image.rsplit("/", 1)[-1] and "@" not in image
    latest = image.endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if untagged or latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    resources = container.get("resources")
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.setdefault("requests", {})
        if isinstance(requests, dict):
            for name, limit in resources["limits"].items():
                requests.setdefault(name, limit)


def qos_class(containers: list[dict[str, Any]]) -> str:
    """``Guaranteed``, ``Burstable`` or ``BestEffort``, from the containers' cpu and memory (GetPodQOS)."""
    requested: dict[str, Decimal] = {}
    limited: dict[str, Decimal] = {}
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        for section, totals in (("requests", requested), ("limits", limited)):
            values = resources.get(section) or {}
            for name in _QOS_RESOURCES:
                if name in values:
                    try:
                        amount = parse_quantity(values[name])
                    except ValueError:
                        continue
                    if amount != 0:
                        totals[name] = totals.get(name, Decimal(0)) + amount
        if not all(name in (resources.get("limits") or {}) for name in _QOS_RESOURCES):
            guaranteed = False
    if not requested and not limited:
        return "BestEffort"
    if guaranteed and requested == limited:
        return "Guaranteed"
    return "Burstable"
