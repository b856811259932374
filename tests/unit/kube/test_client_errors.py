"""Mapping HTTP answers and watch ERROR events to the port's ApiError types."""

from __future__ import annotations

import json

import pytest

from k8s_backend.kube.client import error_from_response, error_from_status
from k8s_backend.kube.port import (
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
    UnauthorizedError,
)


def status_body(code: int, reason: str, message: str, **details: object) -> bytes:
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (401, "Unauthorized", UnauthorizedError),
        (403, "Forbidden", ForbiddenError),
        (404, "NotFound", NotFoundError),
        (409, "AlreadyExists", ConflictError),
        (409, "Conflict", ConflictError),
        (410, "Expired", GoneError),
        (422, "Invalid", InvalidError),
        (429, "TooManyRequests", TooManyRequestsError),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
    ],
)
def test_status_body_maps_to_error_type_with_message_and_reason(code: int, reason: str, cls: type) -> None:
    error = error_from_response(code, status_body(code, reason, f"boom {code}"), {})
    assert type(error) is cls
    assert error.status == code
    assert error.reason == reason
    assert error.message == f"boom {code}"
    assert error.body is not None and error.body["code"] == code


def test_http_status_wins_over_status_code_field() -> None:
    # An aggregated or proxied answer may carry a Status whose code disagrees with the HTTP status.
    error = error_from_response(404, status_body(500, "NotFound", "gone"), {})
    assert isinstance(error, NotFoundError)


def test_retry_after_header_is_parsed() -> None:
    error = error_from_response(429, status_body(429, "TooManyRequests", "slow down"), {"Retry-After": "7"})
    assert isinstance(error, TooManyRequestsError)
    assert error.retry_after == 7.0


def test_retry_after_from_status_details_when_no_header() -> None:
    body = status_body(429, "TooManyRequests", "slow down", retryAfterSeconds=3)
    assert error_from_response(429, body, {}).retry_after == 3.0


def test_unparsable_retry_after_is_ignored() -> None:
    error = error_from_response(429, b"", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert error.retry_after is None


def test_non_status_body_keeps_text_as_message() -> None:
    error = error_from_response(502, b"<html>bad gateway</html>", {})
    assert isinstance(error, ServerError)
    assert "bad gateway" in error.message


def test_empty_body_gets_a_message_naming_the_status() -> None:
    error = error_from_response(418, b"", {})
    assert type(error) is ApiError
    assert error.status == 418
    assert "418" in str(error)


def test_watch_error_event_410_is_gone() -> None:
    error = error_from_status(
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 1 (5)"}
    )
    assert isinstance(error, GoneError)
    assert "too old" in error.message


def test_watch_error_event_without_code_is_a_server_error() -> None:
    assert isinstance(error_from_status({"kind": "Status", "message": "?"}), ServerError)
