"""Watches over HTTP: chunked streams read by the adapter, and the WebSocket upgrade fabric8 uses."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
from typing import Any

import pytest
from http_helpers import TOKEN, make_api, pod

from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import PODS, GoneError, ServerError, WatchEvent
from k8s_backend.local.apiserver import ApiServer
from k8s_backend.local.apiserver.websocket import (
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    accept_key,
    encode_frame,
    read_frame,
)
from k8s_backend.testing import FakeKubernetes

pytestmark = pytest.mark.http


def collect(stream: Any, until: int) -> list[WatchEvent]:
    """Read ``until`` events, then close the stream."""
    events: list[WatchEvent] = []
    for event in stream:
        events.append(event)
        if len(events) == until:
            stream.close()
    return events


def test_watch_streams_changes_after_a_resource_version(api: OfficialKubernetesApi) -> None:
    api.create(PODS, "default", pod("before"))
    rv = api.list(PODS, "default").resource_version
    stream = api.watch(PODS, "default", resource_version=rv, timeout_seconds=30)
    api.create(PODS, "default", pod("a", app="x"))
    api.patch(PODS, "default", "a", {"metadata": {"labels": {"v": "2"}}})
    api.delete(PODS, "default", "a")
    events = collect(stream, 4)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("MODIFIED", "a"),  # deletionTimestamp first, as a real API server does for every pod
        ("DELETED", "a"),
    ]
    assert events[0].object["kind"] == "Pod"


def test_watch_with_selector_and_resume(api: OfficialKubernetesApi) -> None:
    rv = api.list(PODS, "default").resource_version
    api.create(PODS, "default", pod("a", role="exec"))
    api.create(PODS, "default", pod("b", role="driver"))
    first = collect(api.watch(PODS, "default", label_selector="role=exec", resource_version=rv), 1)
    assert [e.object["metadata"]["name"] for e in first] == ["a"]
    last_rv = first[0].object["metadata"]["resourceVersion"]
    api.create(PODS, "default", pod("c", role="exec"))
    resumed = collect(api.watch(PODS, "default", label_selector="role=exec", resource_version=last_rv), 1)
    assert [e.object["metadata"]["name"] for e in resumed] == ["c"]


def test_too_old_resource_version_raises_gone(api: OfficialKubernetesApi, fake: FakeKubernetes) -> None:
    api.create(PODS, "default", pod("a"))
    api.create(PODS, "default", pod("b"))
    fake.compact()
    with pytest.raises(GoneError, match="too old resource version"):
        list(api.watch(PODS, "default", resource_version="1"))


def test_watch_error_event_is_a_status_in_the_stream(server: ApiServer, fake: FakeKubernetes) -> None:
    api_create = make_api(server, [])
    api_create.create(PODS, "default", pod("a"))
    api_create.close()
    fake.compact()
    lines = _raw_watch_lines(server.url, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=1")
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status" and event["object"]["code"] == 410


def test_injected_watch_fault_surfaces_from_iteration(
    api: OfficialKubernetesApi, fake: FakeKubernetes
) -> None:
    fake.fail_next("watch", PODS, status=500, message="etcd is sad")
    with pytest.raises(ServerError, match="etcd is sad"):
        list(api.watch(PODS, "default"))


def test_bookmarks_are_passed_through(api: OfficialKubernetesApi, fake: FakeKubernetes) -> None:
    rv = api.list(PODS, "default").resource_version
    stream = api.watch(PODS, "default", resource_version=rv)
    fake.send_bookmark()
    [event] = collect(stream, 1)
    assert event.type == "BOOKMARK"
    assert event.object["metadata"]["resourceVersion"] == fake.resource_version


def test_server_timeout_ends_the_stream(api: OfficialKubernetesApi) -> None:
    rv = api.list(PODS, "default").resource_version
    events = list(api.watch(PODS, "default", resource_version=rv, timeout_seconds=1, allow_bookmarks=False))
    assert events == []


def test_dropped_watch_ends_iteration(api: OfficialKubernetesApi, fake: FakeKubernetes) -> None:
    rv = api.list(PODS, "default").resource_version
    stream = api.watch(PODS, "default", resource_version=rv)
    done = threading.Event()
    received: list[WatchEvent] = []

    def read() -> None:
        received.extend(stream)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    api.create(PODS, "default", pod("a"))
    fake.drop_watches()
    assert done.wait(10), "a dropped watch must end the client's iteration"


def test_stopping_the_server_ends_open_watches(fake: FakeKubernetes) -> None:
    server = ApiServer(fake, token=TOKEN).start()
    api = make_api(server, [])
    stream = api.watch(PODS, "default")
    done = threading.Event()

    def read() -> None:
        list(stream)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    server.stop()
    assert done.wait(10)
    assert fake.open_watches() == 0
    api.close()


def test_client_closing_a_watch_closes_it_on_the_server(
    api: OfficialKubernetesApi, fake: FakeKubernetes
) -> None:
    stream = api.watch(PODS, "default")
    opened = fake.open_watches()
    assert opened >= 1
    stream.close()
    _wait_for(lambda: fake.open_watches() == opened - 1)


# -- WebSocket -----------------------------------------------------------------------------------------


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _read_headers(sock: socket.socket) -> tuple[str, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, "connection closed during the handshake"
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status, *lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return status, headers, rest


def _raw_watch_lines(url: str, path: str) -> list[bytes]:
    sock = _connect(url)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    _, headers, rest = _read_headers(sock)
    assert headers["transfer-encoding"] == "chunked"
    data = rest
    while not data.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    sock.close()
    body, lines = data, []
    while body:
        size_text, body = body.split(b"\r\n", 1)
        size = int(size_text, 16)
        if size == 0:
            break
        lines.append(body[:size])
        body = body[size + 2 :]
    return lines


class Reader:
    """Frames from a socket, keeping bytes that arrived with the handshake."""

    def __init__(self, sock: socket.socket, pending: bytes) -> None:
        self.sock = sock
        self.pending = pending

    def read(self, size: int) -> bytes:
        while len(self.pending) < size:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            self.pending += chunk
        data, self.pending = self.pending[:size], self.pending[size:]
        return data


def test_websocket_watch(server: ApiServer, api: OfficialKubernetesApi) -> None:
    rv = api.list(PODS, "default").resource_version
    sock = _connect(server.url)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&allowWatchBookmarks=true "
            "HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: v4.channel.k8s.io, base64.channel.k8s.io\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n"
        ).encode()
    )
    status, headers, rest = _read_headers(sock)
    assert status.startswith("HTTP/1.1 101")
    assert headers["sec-websocket-accept"] == accept_key(key)
    assert headers["sec-websocket-protocol"] == "v4.channel.k8s.io"
    reader = Reader(sock, rest)

    api.create(PODS, "default", pod("a"))
    frame = read_frame(reader.read)
    assert frame is not None and frame.opcode == OP_TEXT
    event = json.loads(frame.payload)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "a")

    mask = os.urandom(4)
    sock.sendall(encode_frame(OP_PING, b"hi", mask=mask))
    frame = read_frame(reader.read)
    assert frame is not None and (frame.opcode, frame.payload) == (OP_PONG, b"hi")

    sock.sendall(encode_frame(OP_CLOSE, (1000).to_bytes(2, "big"), mask=mask))
    frame = read_frame(reader.read)
    assert frame is not None and frame.opcode == OP_CLOSE
    assert read_frame(reader.read) is None  # then the server ends the connection
    sock.close()


def test_websocket_upgrade_without_auth_is_refused(server: ApiServer) -> None:
    sock = _connect(server.url)
    sock.sendall(
        b"GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n"
    )
    status, _, _ = _read_headers(sock)
    assert status.startswith("HTTP/1.1 401")
    sock.close()


def _wait_for(condition: Any, timeout: float = 10.0) -> None:
    event = threading.Event()
    deadline_checks = int(timeout / 0.01)
    for _ in range(deadline_checks):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("condition not met in time")
