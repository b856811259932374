"""The API server's ``metav1.Status``: the reason it names for each HTTP error code, and the body it sends.

One home for what both fakes (InMemoryKubernetes's errors and the embedded HTTP server) answer, so that an
error looks the same whichever way a client reaches them, and as a real API server's does.
"""

from __future__ import annotations

from typing import Any

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    """The reason the API server gives with ``code`` (``InternalError`` for other 5xx, else ``Unknown``)."""
    return REASONS.get(code, "InternalError" if code >= 500 else "Unknown")


def failure_body(
    code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``Status`` with ``status: Failure``, as the API server sends it with an error."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or reason_for(code),
        "code": code,
    }
    if details:
        body["details"] = details
    return body
