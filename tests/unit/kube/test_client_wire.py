"""The official-client adapter over the wire, against a tiny scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson
import pytest

from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.client import ORJSON_MAX_BYTES, OfficialKubernetesApi
from k8s_backend.kube.port import (
    JSON_PATCH,
    POD_GROUPS,
    PODS,
    STRATEGIC_MERGE_PATCH,
    ApiConnectionError,
    ApiError,
    GoneError,
    InvalidError,
    NotFoundError,
    ServerError,
)
from k8s_backend.kube.retry import RetryPolicy, caller_retries

Writer = Callable[[BaseHTTPRequestHandler], None]


@attrs.frozen
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    port: int = 0  # the client's port: the same for requests on one kept-alive connection


class Script:
    """Answers requests in order with queued writers; records every request."""

    def __init__(self) -> None:
        self.answers: list[Writer] = []
        self.seen: list[Seen] = []
        self.lock = threading.Lock()

    def reply(self, status: int = 200, body: object = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps({} if body is None else body).encode()

        def write(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)

        self.answers.append(write)

    def stream(self, lines: Iterator[bytes] | list[bytes]) -> None:
        """A chunked watch response, one chunk per item."""

        def write(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            for piece in lines:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")

        self.answers.append(write)

    def raw(self, data: bytes, length: int, content_type: str | None = None) -> None:
        """A 200 with ``data`` under a Content-Length of ``length`` (larger: an answer cut short)."""

        def write(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            if content_type is not None:
                handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(length))
            handler.end_headers()
            handler.wfile.write(data)
            handler.wfile.flush()
            handler.close_connection = True

        self.answers.append(write)

    def status(self, code: int, reason: str, message: str, headers: dict[str, str] | None = None) -> None:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
        self.reply(code, body, headers)


@contextlib.contextmanager
def serving(tls: ssl.SSLContext | None = None) -> Iterator[tuple[Script, str]]:
    """A scripted server on 127.0.0.1 (HTTPS with ``tls``)."""
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def handle_any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            with script.lock:
                script.seen.append(
                    Seen(
                        self.command,
                        parts.path,
                        {k: v[0] for k, v in parse_qs(parts.query).items()},
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None,
                        self.client_address[1],
                    )
                )
                answer = script.answers.pop(0) if script.answers else None
            if answer is None:
                self.send_error(599, "unscripted")
                return
            answer(self)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield script, f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def script() -> Iterator[tuple[Script, str]]:
    with serving() as served:
        yield served


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def api(script: tuple[Script, str], sleeps: list[float]) -> Iterator[OfficialKubernetesApi]:
    _, url = script
    conf = ApiClientConf(master=url, oauth_token="tok", request_timeout=5.0, connection_timeout=5.0)
    adapter = OfficialKubernetesApi.from_conf(
        conf,
        namespace_default="ns",
        retry=RetryPolicy(sleep=sleeps.append, jitter=0.0),
        environ={"HOME": "/nonexistent"},
    )
    yield adapter
    adapter.close()


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}


def test_create_posts_json_with_token_and_returns_plain_dict(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.reply(201, {**pod("p1"), "metadata": {"name": "p1", "resourceVersion": "5"}})
    created = api.create(PODS, None, pod("p1"))
    assert type(created) is dict and created["metadata"]["resourceVersion"] == "5"
    [seen] = s.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/namespaces/ns/pods")
    assert seen.headers["authorization"] == "Bearer tok"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == pod("p1")


def test_list_sends_selectors_and_fills_kind(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    s.reply(
        200,
        {"kind": "PodList", "metadata": {"resourceVersion": "42"}, "items": [{"metadata": {"name": "a"}}]},
    )
    result = api.list(
        PODS, "other", label_selector="a=b,c!=d", field_selector="status.phase=Running", resource_version="0"
    )
    assert result.resource_version == "42"
    assert result.items == [{"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "Pod"}]
    assert s.seen[0].path == "/api/v1/namespaces/other/pods"
    assert s.seen[0].query == {
        "labelSelector": "a=b,c!=d",
        "fieldSelector": "status.phase=Running",
        "resourceVersion": "0",
    }


def test_custom_resources_use_the_group_path(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    s.reply(200, {"metadata": {"name": "pg"}})
    api.get(POD_GROUPS, "ns", "pg")
    assert s.seen[0].path == "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg"


@pytest.mark.parametrize(
    ("patch", "patch_type"),
    [
        ([{"op": "remove", "path": "/x"}], JSON_PATCH),
        ({"metadata": {"labels": {"a": "b"}}}, STRATEGIC_MERGE_PATCH),
    ],
)
def test_patch_sends_the_patch_content_type(
    script: tuple[Script, str], api: OfficialKubernetesApi, patch: Any, patch_type: str
) -> None:
    s, _ = script
    s.reply(200, pod("p1"))
    api.patch(PODS, "ns", "p1", patch, patch_type=patch_type)
    assert s.seen[0].method == "PATCH"
    assert s.seen[0].headers["content-type"] == patch_type
    assert s.seen[0].body == patch


def test_namespace_none(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    for _ in range(4):
        s.reply(200, {"items": [], "metadata": {"name": "x"}})
    api.list(PODS, None)  # every namespace
    api.create(PODS, None, {"metadata": {"name": "a", "namespace": "given"}})  # the body's namespace
    api.create(PODS, None, {"metadata": {"name": "b"}})  # namespace_default
    api.get(PODS, None, "c")  # namespace_default
    assert [seen.path for seen in s.seen] == [
        "/api/v1/pods",
        "/api/v1/namespaces/given/pods",
        "/api/v1/namespaces/ns/pods",
        "/api/v1/namespaces/ns/pods/c",
    ]


def test_delete_and_delete_collection_parameters(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.reply(200, {"kind": "Status", "status": "Success"})
    s.reply(200, {"kind": "PodList", "items": []})
    api.delete(PODS, "ns", "p1", grace_period_seconds=0)
    api.delete_collection(PODS, "ns", label_selector="app=x")
    assert (s.seen[0].method, s.seen[0].path, s.seen[0].query) == (
        "DELETE",
        "/api/v1/namespaces/ns/pods/p1",
        {"gracePeriodSeconds": "0"},
    )
    assert (s.seen[1].method, s.seen[1].path, s.seen[1].query) == (
        "DELETE",
        "/api/v1/namespaces/ns/pods",
        {"labelSelector": "app=x", "propagationPolicy": "Background"},
    )


def test_delete_collection_reads_the_deleted_objects_without_decoding_them(
    script: tuple[Script, str], api: OfficialKubernetesApi, mocker: Any
) -> None:
    # The answer lists every deleted pod, whole (60 MB for 10,000): decoding it was most of stop()'s CPU.
    s, _ = script
    s.reply(200, {"kind": "PodList", "items": [pod(f"p{i}") for i in range(500)]})
    s.reply(200, pod("after"))
    decoders = [mocker.spy(json, "loads"), mocker.spy(orjson, "loads")]
    api.delete_collection(PODS, "ns", label_selector="app=x")
    assert [d.call_count for d in decoders] == [0, 0]
    assert api.get(PODS, "ns", "after")["metadata"]["name"] == "after"  # the next answer is read whole
    assert [d.call_count for d in decoders] == [0, 1]  # one object: orjson
    assert s.seen[0].port == s.seen[1].port  # read to its end: the connection was kept and reused


def test_answers_over_a_megabyte_are_decoded_with_json_for_its_lower_peak_memory(
    script: tuple[Script, str], api: OfficialKubernetesApi, mocker: Any
) -> None:
    s, _ = script
    big = {"kind": "PodList", "metadata": {}, "items": [pod(f"p{i}") for i in range(13000)]}
    assert len(json.dumps(big)) > ORJSON_MAX_BYTES
    s.reply(200, big)
    decoders = [mocker.spy(json, "loads"), mocker.spy(orjson, "loads")]
    assert len(api.list(PODS, "ns").items) == 13000
    assert [d.call_count for d in decoders] == [1, 0]


def test_a_collection_delete_answer_cut_short_is_a_connection_error(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.raw(b'{"kind":"PodList",', 100000, "application/json")
    with caller_retries(), pytest.raises(ApiConnectionError):
        api.delete_collection(PODS, "ns", label_selector="app=x")


def test_422_is_invalid_with_the_server_message_and_not_retried(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.status(422, "Invalid", 'Pod "P" is invalid: metadata.name: Invalid value')
    with pytest.raises(InvalidError, match=r"metadata\.name: Invalid value"):
        api.create(PODS, "ns", pod("P"))
    assert len(s.seen) == 1


def test_404_is_not_found(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    s.status(404, "NotFound", 'pods "p9" not found')
    with pytest.raises(NotFoundError, match='pods "p9" not found'):
        api.get(PODS, "ns", "p9")
    assert len(s.seen) == 1


def test_429_is_retried_after_retry_after(
    script: tuple[Script, str], api: OfficialKubernetesApi, sleeps: list[float]
) -> None:
    s, _ = script
    s.status(429, "TooManyRequests", "slow down", {"Retry-After": "2"})
    s.reply(201, pod("p1"))
    assert api.create(PODS, "ns", pod("p1"))["metadata"]["name"] == "p1"
    assert len(s.seen) == 2
    assert sleeps[0] >= 2.0


def test_5xx_is_retried_until_attempts_run_out(
    script: tuple[Script, str], api: OfficialKubernetesApi, sleeps: list[float]
) -> None:
    s, _ = script
    attempts = RetryPolicy().max_attempts  # the default budget (fabric8's 10)
    for _ in range(attempts):
        s.status(503, "ServiceUnavailable", "busy")
    with pytest.raises(ServerError, match="busy"):
        api.get(PODS, "ns", "p1")
    assert len(s.seen) == attempts and len(sleeps) == attempts - 1


def test_connection_refused_names_the_url_and_source(sleeps: list[float]) -> None:
    conf = ApiClientConf(master="http://127.0.0.1:1", request_timeout=1.0, connection_timeout=1.0)
    adapter = OfficialKubernetesApi.from_conf(
        conf,
        namespace_default="ns",
        retry=RetryPolicy(sleep=sleeps.append, max_attempts=2),
        environ={"HOME": "/nonexistent"},
    )
    with pytest.raises(ApiConnectionError) as info:
        adapter.get(PODS, None, "p1")
    assert "http://127.0.0.1:1/api/v1/namespaces/ns/pods/p1" in str(info.value)
    assert "spark.master" in str(info.value)
    assert len(sleeps) == 1  # retried once


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_watch_reads_events_line_by_line(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    added = event("ADDED", pod("a"))
    # One event split across chunks, and two events in one chunk.
    s.stream(
        [
            added[:10],
            added[10:] + event("MODIFIED", pod("a")),
            event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}),
        ]
    )
    stream = api.watch(PODS, "ns", label_selector="x=y", resource_version="3", timeout_seconds=60)
    events = [(e.type, e.object["metadata"].get("name")) for e in stream]
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("BOOKMARK", None)]
    assert s.seen[0].query == {
        "watch": "true",
        "labelSelector": "x=y",
        "allowWatchBookmarks": "true",
        "resourceVersion": "3",
        "timeoutSeconds": "60",
    }


def test_pod_log_streams_lines_of_the_container_log(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.stream([b"first li", b"ne\nsecond line\n", b"last"])
    lines = list(api.pod_log("ns", "driver", container="spark-kubernetes-driver"))
    assert lines == ["first line", "second line", "last"]
    assert s.seen[0].path == "/api/v1/namespaces/ns/pods/driver/log"
    assert s.seen[0].query == {"follow": "true", "container": "spark-kubernetes-driver"}


def test_watch_error_event_raises_gone(script: tuple[Script, str], api: OfficialKubernetesApi) -> None:
    s, _ = script
    status = {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version: 1 (7)",
    }
    s.stream([event("ERROR", status)])
    with pytest.raises(GoneError, match="too old"):
        list(api.watch(PODS, "ns", resource_version="1"))


def test_watch_open_errors_are_mapped_and_retried(
    script: tuple[Script, str], api: OfficialKubernetesApi, sleeps: list[float]
) -> None:
    s, _ = script
    s.status(429, "TooManyRequests", "later", {"Retry-After": "1"})
    s.stream([event("ADDED", pod("a"))])
    assert [e.type for e in api.watch(PODS, "ns")] == ["ADDED"]
    assert sleeps and sleeps[0] >= 1.0
    s.status(403, "Forbidden", "no watch for you")
    with pytest.raises(Exception, match="no watch for you"):
        api.watch(PODS, "ns")


def test_close_from_another_thread_unblocks_the_reader(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    release = threading.Event()

    def lines() -> Iterator[bytes]:
        yield event("ADDED", pod("a"))
        release.wait(10)  # the server goes quiet, like an idle watch

    s.stream(lines())
    stream = api.watch(PODS, "ns", timeout_seconds=300)
    received: list[str] = []
    finished = threading.Event()

    def read() -> None:
        received.extend(e.type for e in stream)
        finished.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stream.close()
    assert finished.wait(5), "close() did not unblock the reader"
    release.set()
    assert received in (["ADDED"], [])


def test_silent_watch_ends_after_the_client_read_timeout(script: tuple[Script, str]) -> None:
    s, url = script
    release = threading.Event()

    def lines() -> Iterator[bytes]:
        yield event("ADDED", pod("a"))
        release.wait(10)

    s.stream(lines())
    adapter = OfficialKubernetesApi.from_conf(
        ApiClientConf(master=url), namespace_default="ns", environ={"HOME": "/nonexistent"}
    )
    adapter._watch_idle_timeout = 0.3  # the half-open connection case, shortened
    try:
        assert [e.type for e in adapter.watch(PODS, "ns")] == ["ADDED"]
    finally:
        release.set()
        adapter.close()


def test_stream_ended_by_the_server_ends_iteration(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.stream([])
    assert list(api.watch(PODS, "ns", timeout_seconds=1)) == []


def test_malformed_answers_are_api_errors_not_retried(
    script: tuple[Script, str], api: OfficialKubernetesApi
) -> None:
    s, _ = script
    s.raw(b"<html", 5)
    with pytest.raises(ApiError, match="non-JSON"):
        api.get(PODS, "ns", "p")
    s.stream([b"not json\n"])
    with pytest.raises(ApiError, match="malformed watch event"):
        list(api.watch(PODS, "ns"))
    assert len(s.seen) == 2


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1: (cert file, key file)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "server.crt"), str(folder / "server.key")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            key,
            "-out",
            cert,
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_script(certificate: tuple[str, str]) -> Iterator[tuple[Script, str]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with serving(context) as served:
        yield served


def tls_api(url: str, sleeps: list[float], **conf: Any) -> OfficialKubernetesApi:
    return OfficialKubernetesApi.from_conf(
        ApiClientConf(master=url, oauth_token="tok", **conf),
        namespace_default="ns",
        retry=RetryPolicy(sleep=sleeps.append),
        environ={"HOME": "/nonexistent"},
    )


def test_tls_is_verified_by_default_and_not_retried(
    tls_script: tuple[Script, str], sleeps: list[float]
) -> None:
    _, url = tls_script
    adapter = tls_api(url, sleeps)
    with pytest.raises(ApiConnectionError, match="CERTIFICATE_VERIFY_FAILED") as info:
        adapter.get(PODS, "ns", "p")
    assert info.value.reason == "SSLError"
    assert sleeps == []  # a bad certificate does not heal by waiting
    adapter.close()


def test_tls_with_the_ca_file(
    tls_script: tuple[Script, str], certificate: tuple[str, str], sleeps: list[float]
) -> None:
    s, url = tls_script
    s.reply(200, pod("p"))
    adapter = tls_api(url, sleeps, ca_cert_file=certificate[0])
    assert adapter.get(PODS, "ns", "p")["metadata"]["name"] == "p"
    assert s.seen[0].headers["authorization"] == "Bearer tok"
    adapter.close()


def test_trust_certificates_skips_verification(tls_script: tuple[Script, str], sleeps: list[float]) -> None:
    s, url = tls_script
    s.reply(200, pod("p"))
    adapter = tls_api(url, sleeps, trust_certificates=True)
    with pytest.warns(Warning):  # urllib3 warns about unverified HTTPS, as it should
        assert adapter.get(PODS, "ns", "p")["metadata"]["name"] == "p"
    adapter.close()
