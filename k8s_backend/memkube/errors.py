"""The errors InMemoryKubernetes answers, with the API server's messages and ``Status`` bodies.

Every error carries a ``metav1.Status``-shaped ``body`` so an HTTP front end can serve it unchanged.
"""

from __future__ import annotations

import attrs

from k8s_backend.kube.port import ApiError, Obj, Resource, error_for_status
from k8s_backend.kube.status import failure_body


def resource_name(resource: Resource) -> str:
    """How the server names a kind in messages: ``pods``, ``podgroups.scheduling.volcano.sh``."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def status_body(status: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    """A ``metav1.Status`` failure object."""
    return failure_body(status, message, reason, details)


def api_error(
    status: int,
    reason: str,
    message: str,
    *,
    resource: Resource | None = None,
    name: str | None = None,
    causes: list[Obj] | None = None,
    retry_after: float | None = None,
) -> ApiError:
    """The :class:`ApiError` subclass for ``status``, with a matching ``Status`` body."""
    details: Obj | None = None
    if resource is not None or name is not None or causes or retry_after is not None:
        details = {}
        if name is not None:
            details["name"] = name
        if resource is not None:
            details["group"] = resource.group
            details["kind"] = resource.plural
        if causes:
            details["causes"] = causes
        if retry_after is not None:
            details["retryAfterSeconds"] = int(retry_after)
    body = status_body(status, reason, message, details)
    return error_for_status(status, message, reason=reason, retry_after=retry_after, body=body)


def not_found(resource: Resource, name: str) -> ApiError:
    return api_error(
        404, "NotFound", f'{resource_name(resource)} "{name}" not found', resource=resource, name=name
    )


def already_exists(resource: Resource, name: str) -> ApiError:
    return api_error(
        409,
        "AlreadyExists",
        f'{resource_name(resource)} "{name}" already exists',
        resource=resource,
        name=name,
    )


def conflict(resource: Resource, name: str) -> ApiError:
    message = (
        f'Operation cannot be fulfilled on {resource_name(resource)} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return api_error(409, "Conflict", message, resource=resource, name=name)


def bad_request(message: str) -> ApiError:
    return api_error(400, "BadRequest", message)


def unsupported_media_type(message: str) -> ApiError:
    return api_error(415, "UnsupportedMediaType", message)


def gone(requested: int, oldest: int) -> ApiError:
    return api_error(410, "Expired", f"too old resource version: {requested} ({oldest})")


REQUIRED = "Required value"
INVALID = "Invalid value"
FORBIDDEN = "Forbidden"
NOT_SUPPORTED = "Unsupported value"
DUPLICATE = "Duplicate value"
TOO_LONG = "Too long"

_CAUSE_REASONS = {
    REQUIRED: "FieldValueRequired",
    INVALID: "FieldValueInvalid",
    FORBIDDEN: "FieldValueForbidden",
    NOT_SUPPORTED: "FieldValueNotSupported",
    DUPLICATE: "FieldValueDuplicate",
    TOO_LONG: "FieldValueTooLong",
}


@attrs.frozen
class FieldError:
    """One validation failure: ``spec.containers[0].image: Required value``."""

    field: str
    type: str
    value: object = None
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.field}: {self.type}"
        if self.type in (INVALID, NOT_SUPPORTED, DUPLICATE):
            shown = f'"{self.value}"' if isinstance(self.value, str) else repr(self.value)
            text += f": {shown}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def cause(self) -> Obj:
        return {
            "reason": _CAUSE_REASONS.get(self.type, "FieldValueInvalid"),
            "message": str(self),
            "field": self.field,
        }


def invalid(resource: Resource, name: str, errors: list[FieldError]) -> ApiError:
    """422 ``Kind "name" is invalid: <errors>`` (a bracketed list when there are several)."""
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    kind = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
    return api_error(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {listed}',
        resource=resource,
        name=name,
        causes=[e.cause() for e in errors],
    )
