"""Kubernetes ``metav1.Status`` bodies: how the API server reports errors (and some successes)."""

from __future__ import annotations

import math

from k8s_backend.kube.port import ApiError, Obj
from k8s_backend.kube.status import failure_body


def failure(code: int, message: str, reason: str | None = None, details: Obj | None = None) -> Obj:
    """A ``Status`` with ``status: Failure``."""
    return failure_body(code, message, reason, details)


def success(details: Obj | None = None) -> Obj:
    """A ``Status`` with ``status: Success``."""
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body


def from_error(error: ApiError) -> tuple[int, Obj]:
    """The HTTP status and ``Status`` body for an :class:`ApiError` (its own body when it has one)."""
    code = error.status if error.status >= 400 else 500
    body = error.body
    if isinstance(body, dict) and body.get("kind") == "Status":
        return code, body
    details: Obj | None = None
    if error.retry_after is not None:
        details = {"retryAfterSeconds": retry_after_seconds(error.retry_after)}
    return code, failure(code, error.message, error.reason, details)


def retry_after_seconds(retry_after: float) -> int:
    """Retry-After in whole seconds, rounded up (the header carries integers)."""
    return max(0, math.ceil(retry_after))
