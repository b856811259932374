"""API Priority and Fairness headers: parsed from an answer into the port's error (the real server's APF
429 is plain text, with ``Retry-After: 1`` and the FlowSchema and priority level UIDs)."""

from __future__ import annotations

from urllib3 import HTTPHeaderDict

from k8s_backend.kube.client import error_from_response
from k8s_backend.kube.flow_control import FlowControl, flow_control_from_headers
from k8s_backend.kube.port import ForbiddenError, TooManyRequestsError

FS, PL = "1a6d8f00-896f-4f00-87de-6b7d7b27e348", "336cd2fd-6895-40f1-830e-cb58a5d5b95c"
# As kube-apiserver v1.37 sends them (Go canonicalises header names).
APF_429 = HTTPHeaderDict(
    {
        "Content-Type": "text/plain; charset=utf-8",
        "Retry-After": "1",
        "X-Kubernetes-Pf-Flowschema-Uid": FS,
        "X-Kubernetes-Pf-Prioritylevel-Uid": PL,
    }
)


def test_the_pf_headers_name_the_flow_schema_and_priority_level_whatever_their_case() -> None:
    assert flow_control_from_headers(APF_429) == FlowControl(FS, PL)
    assert flow_control_from_headers(HTTPHeaderDict({"x-kubernetes-pf-flowschema-uid": FS})) == FlowControl(
        FS, "?"
    )


def test_no_pf_headers_no_flow_control() -> None:
    assert flow_control_from_headers(HTTPHeaderDict({"Retry-After": "1"})) is None
    assert flow_control_from_headers({"X-Kubernetes-PF-FlowSchema-UID": " "}) is None


def test_apfs_plain_text_429_becomes_a_too_many_requests_error_with_its_wait_and_its_class() -> None:
    error = error_from_response(429, b"Too many requests, please try again later.\n", APF_429)
    assert type(error) is TooManyRequestsError
    assert error.retry_after == 1.0
    assert error.flow_control == FlowControl(FS, PL)
    assert error.message == "Too many requests, please try again later."
    assert FS in error.flow_control.describe() and PL in error.flow_control.describe()


def test_a_status_body_keeps_the_pf_headers_too() -> None:
    body = b'{"kind":"Status","code":403,"reason":"Forbidden","message":"pods is forbidden"}'
    error = error_from_response(403, body, APF_429)
    assert type(error) is ForbiddenError
    assert error.flow_control == FlowControl(FS, PL)


def test_an_answer_without_pf_headers_has_no_flow_control() -> None:
    assert error_from_response(429, b"slow down", {"Retry-After": "2"}).flow_control is None
