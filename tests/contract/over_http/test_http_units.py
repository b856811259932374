"""The API server's building blocks without a socket: routes, Status bodies, WebSocket frames."""

from __future__ import annotations

import io
import json

import pytest

from k8s_backend.kube.port import NAMESPACES, POD_GROUPS, PODS, GoneError, TooManyRequestsError
from k8s_backend.local.apiserver import discovery, status
from k8s_backend.local.apiserver.endpoints import Endpoints, is_watch
from k8s_backend.local.apiserver.routes import DiscoveryRoute, ResourceRoute, RouteError, parse_path
from k8s_backend.local.apiserver.streaming import event_lines
from k8s_backend.local.apiserver.websocket import (
    OP_BINARY,
    OP_TEXT,
    accept_key,
    choose_protocol,
    encode_frame,
    is_upgrade,
    read_frame,
)
from k8s_backend.testing import FakeKubernetes


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/api/v1/namespaces/ns/pods", ResourceRoute(PODS, "ns")),
        ("/api/v1/pods", ResourceRoute(PODS, None)),
        ("/api/v1/namespaces/ns/pods/p1", ResourceRoute(PODS, "ns", "p1")),
        ("/api/v1/namespaces/ns/pods/p1/status", ResourceRoute(PODS, "ns", "p1", "status")),
        ("/api/v1/namespaces", ResourceRoute(NAMESPACES, None)),
        ("/api/v1/namespaces/team", ResourceRoute(NAMESPACES, None, "team")),
        ("/api/v1/namespaces/team/finalize", ResourceRoute(NAMESPACES, None, "team", "finalize")),
        ("/api/v1/watch/namespaces/ns/pods", ResourceRoute(PODS, "ns", watch_prefix=True)),
        (
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g",
            ResourceRoute(POD_GROUPS, "ns", "g"),
        ),
        ("/version", DiscoveryRoute("/version")),
        ("/apis/scheduling.volcano.sh", DiscoveryRoute("/apis/scheduling.volcano.sh")),
    ],
)
def test_paths_to_routes(path: str, route: object) -> None:
    assert parse_path(path) == route


def test_unknown_custom_resources_are_generic() -> None:
    route = parse_path("/apis/example.com/v1/namespaces/ns/widgets/w")
    assert isinstance(route, ResourceRoute)
    assert (route.resource.group, route.resource.version, route.resource.plural) == (
        "example.com",
        "v1",
        "widgets",
    )
    assert route.resource.kind == "Widget"


@pytest.mark.parametrize("path", ["/", "/foo", "/api/v1/widgets", "/api/v1/namespaces/ns/pods/p/status/x"])
def test_paths_that_address_nothing(path: str) -> None:
    with pytest.raises(RouteError):
        parse_path(path)


def test_watch_detection() -> None:
    route = ResourceRoute(PODS, "ns")
    assert is_watch("GET", route, {"watch": "true"})
    assert is_watch("GET", route, {"watch": "1"})
    assert not is_watch("GET", route, {"watch": "false"})
    assert not is_watch("POST", route, {"watch": "true"})
    assert is_watch("GET", ResourceRoute(PODS, "ns", watch_prefix=True), {})


def test_status_from_error_keeps_the_errors_own_body_and_retry_after() -> None:
    code, body = status.from_error(GoneError("too old"))
    assert code == 410 and body["reason"] == "Expired" and body["message"] == "too old"
    code, body = status.from_error(TooManyRequestsError("slow", retry_after=1.2))
    assert code == 429 and body["details"] == {"retryAfterSeconds": 2}
    own = status.failure(422, "bad", "Invalid")
    assert status.from_error(TooManyRequestsError("x", status=422, body=own)) == (422, own)


def test_watch_failure_becomes_an_error_event() -> None:
    fake = FakeKubernetes()
    fake.fail_next("watch", PODS, status=403, message="nope")
    [line] = list(event_lines(Endpoints(fake).open_watch(ResourceRoute(PODS, "ns"), {})))
    event = json.loads(line)
    assert (
        event["type"] == "ERROR" and event["object"]["code"] == 403 and event["object"]["message"] == "nope"
    )


def test_single_object_watch_selects_by_name() -> None:
    fake = FakeKubernetes(watch_blocking=False, namespaces=["ns"])
    fake.create(
        PODS, "ns", {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    fake.create(
        PODS, "ns", {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    lines = event_lines(Endpoints(fake).open_watch(ResourceRoute(PODS, "ns", "b"), {}))
    assert [json.loads(line)["object"]["metadata"]["name"] for line in lines] == ["b"]


def test_discovery_lists_the_served_kinds() -> None:
    v1 = discovery.document("/api/v1")
    assert v1 is not None
    pods = next(r for r in v1["resources"] if r["name"] == "pods")
    assert pods["namespaced"] and "watch" in pods["verbs"]
    namespaces = next(r for r in v1["resources"] if r["name"] == "namespaces")
    assert not namespaces["namespaced"]
    assert discovery.document("/apis/unknown.io") is None


def test_accept_key_matches_the_rfc_example() -> None:
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_upgrade_detection_and_protocol_choice() -> None:
    assert is_upgrade("websocket", "keep-alive, Upgrade")
    assert not is_upgrade("h2c", "Upgrade")
    assert not is_upgrade(None, None)
    assert choose_protocol("v4.channel.k8s.io, base64.channel.k8s.io") == "v4.channel.k8s.io"
    assert choose_protocol(None) is None


@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536, 70000])
@pytest.mark.parametrize("mask", [None, b"\x01\x02\x03\x04"])
def test_frames_round_trip(size: int, mask: bytes | None) -> None:
    payload = bytes(i % 251 for i in range(size))
    encoded = encode_frame(OP_BINARY, payload, mask=mask)
    if mask is not None and size:
        assert encoded[-size:] != payload  # masked on the wire
    frame = read_frame(io.BytesIO(encoded).read)
    assert frame is not None and frame.opcode == OP_BINARY and frame.fin and frame.payload == payload


def test_read_frame_at_end_of_stream_and_inside_a_frame() -> None:
    assert read_frame(io.BytesIO(b"").read) is None
    truncated = encode_frame(OP_TEXT, b"hello")[:-2]
    with pytest.raises(Exception, match="inside a frame"):
        read_frame(io.BytesIO(truncated).read)
