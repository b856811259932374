"""An HTTP Kubernetes API server on 127.0.0.1 in front of an in-memory API (e.g. InMemoryKubernetes).

Real clients talk to it unchanged: the official Python client, and Spark's fabric8 client (which opens
watches as WebSocket upgrades). See :mod:`endpoints` for the verbs, :mod:`streaming` for watches.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import socket
import ssl
import sys
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from k8s_backend.kube.port import PODS, ApiError, Obj
from k8s_backend.local.apiserver import discovery, status
from k8s_backend.local.apiserver.endpoints import Endpoints, is_watch
from k8s_backend.local.apiserver.logs import LogLocator, PodLogs
from k8s_backend.local.apiserver.routes import DiscoveryRoute, ResourceRoute, RouteError, parse_path
from k8s_backend.local.apiserver.streaming import serve_chunked, serve_websocket
from k8s_backend.local.apiserver.websocket import accept_key, choose_protocol, is_upgrade

log = logging.getLogger(__name__)

HEALTH_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
HANDSHAKE_TIMEOUT = 10.0  # seconds a client has to complete the TLS handshake
MAX_BODY = 64 * 1024 * 1024


@attrs.frozen
class RequestRecord:
    """One request the server answered: method, path with query, and the status it sent."""

    method: str
    path: str
    status: int


class ApiServer:
    """Serve ``api`` (a KubernetesApi with ``update`` and ``patch_status``) over HTTP.

    ``port=0`` picks a free port; ``token`` makes every request need ``Authorization: Bearer <token>``
    (others get 401). Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        api: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        logs: LogLocator | None = None,
        tls: tuple[Path, Path] | None = None,
        request_log_size: int | None = None,
    ) -> None:
        """``logs`` finds container log files (a kubelet's), which ``pods/{name}/log`` serves; ``tls``
        (certificate, key) serves https instead of http; ``request_log_size`` bounds :attr:`request_log`
        to the latest requests (None: all)."""
        self.api = api
        self.endpoints = Endpoints(api)
        self.pod_logs = None if logs is None else PodLogs(api, logs)
        self.stopping = threading.Event()  # ends followed logs
        self._tls = None if tls is None else _server_context(*tls)
        self._address = (host, port)
        self._token = token
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._all_closed = threading.Condition(self._lock)
        self._records: deque[RequestRecord] = deque(maxlen=request_log_size)
        self._connections: set[socket.socket] = set()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ApiServer:
        """Bind and serve in a background thread; returns self."""
        if self._httpd is not None:
            raise RuntimeError(f"ApiServer is already serving at {self.url}")
        self.stopping.clear()
        self._httpd = _HttpServer(self._address, self)
        if self._tls is not None:
            # The handshake happens in each connection's own thread (see _Handler.setup): a client that
            # never completes it must not block the accept loop.
            self._httpd.socket = self._tls.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="apiserver", daemon=True
        )
        self._thread.start()
        log.info("Kubernetes API server listening at %s", self.url)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, drop every connection (open watches end), wait for handlers to finish."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        self.drop_connections()
        with self._all_closed:
            if not self._all_closed.wait_for(lambda: not self._connections, timeout):
                log.warning("ApiServer: %d connections still open after %ss", len(self._connections), timeout)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout)

    def drop_connections(self) -> None:
        """Cut every open client connection (like a restarting API server or a network blip)."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("ApiServer is not started: call start() or use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self._tls is not None else 'http'}://{host!s}:{port}"

    @property
    def request_log(self) -> list[RequestRecord]:
        """The answered requests, oldest first (a copy): every one, or the latest ``request_log_size``."""
        with self._lock:
            return list(self._records)

    def clear_request_log(self) -> None:
        with self._lock:
            self._records.clear()

    # -- used by the request handler ----------------------------------------------------------------

    def record(self, method: str, path: str, code: int) -> None:
        with self._lock:
            self._records.append(RequestRecord(method, path, code))

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        scheme, _, credentials = (header or "").partition(" ")
        # Constant-time: the time a comparison takes must not tell how much of a guessed token is right.
        offered = credentials.strip().encode()
        return scheme.lower() == "bearer" and hmac.compare_digest(offered, self._token.encode())

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)
            self._all_closed.notify_all()


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # ApiServer.stop() waits for connections itself, with a timeout
    request_queue_size = 128  # bursts of pod creates must not overflow the accept backlog (default 5)

    def __init__(self, address: tuple[str, int], owner: ApiServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.debug("Client %s went away: %s", client_address, error)
        else:
            log.exception("ApiServer failed to serve %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "k8s-backend-apiserver"
    server: _HttpServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(HANDSHAKE_TIMEOUT)
            self.request.do_handshake()  # an OSError here ends this connection only
            self.request.settimeout(None)
        super().setup()
        # Headers and body go out as separate writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every answer.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner.opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner.closed(self.connection)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # Called by send_response: the one place every answer goes through.
        number = int(code) if isinstance(code, int) or code.isdigit() else 0
        self.server.owner.record(self.command, self.path, number)
        log.debug("%s %s -> %s", self.command, self.path, code)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("ApiServer: " + format, *args)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            raw = self._read_body()
        except ValueError as e:
            self._send_status(status.failure(400, str(e)))
            self.close_connection = True
            return
        if parts.path in HEALTH_PATHS:
            self._send(200, b"ok", "text/plain")
            return
        if not owner.authorized(self.headers.get("Authorization")):
            self._send_status(status.failure(401, "Unauthorized"))
            return
        try:
            route = parse_path(parts.path)
        except RouteError as e:
            self._send_status(status.failure(404, str(e)))
            return
        if isinstance(route, DiscoveryRoute):
            document = discovery.document(route.path) if self.command == "GET" else None
            if document is None:
                self._send_status(status.failure(404, f"the server could not find {route.path}"))
            else:
                self._send_json(200, document)
            return
        if is_watch(self.command, route, query):
            self._watch(route, query)
        elif route.resource == PODS and route.subresource == "log" and route.name and route.namespace:
            self._log(route.namespace, route.name, query)
        elif _is_upgrade(self.headers):
            self._send_status(status.failure(400, "only watches can be upgraded to a WebSocket here"))
        else:
            self._resource(route, query, raw)

    def _resource(self, route: ResourceRoute, query: dict[str, str], raw: bytes) -> None:
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError as e:
            self._send_status(status.failure(400, f"the request body is not JSON: {e}"))
            return
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            reply = self.server.owner.endpoints.handle(self.command, route, query, body, content_type)
        except ApiError as e:
            self._send_error(e)
        except Exception as e:  # a bug behind the server: answer like an API server, keep serving
            log.exception("ApiServer: %s %s failed", self.command, self.path)
            self._send_status(status.failure(500, f"internal error: {e}"))
        else:
            self._send_json(reply.code, reply.body)

    def _watch(self, route: ResourceRoute, query: dict[str, str]) -> None:
        websocket = _is_upgrade(self.headers)
        key = self.headers.get("Sec-WebSocket-Key")
        if websocket and not key:
            self._send_status(status.failure(400, "a WebSocket upgrade needs Sec-WebSocket-Key"))
            return
        try:
            stream = self.server.owner.endpoints.open_watch(route, query)
        except ApiError as e:
            self._send_error(e)
            return
        self.close_connection = True  # a watch connection is never reused
        if websocket:
            assert key is not None
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept_key(key))
            protocol = choose_protocol(self.headers.get("Sec-WebSocket-Protocol"))
            if protocol:
                self.send_header("Sec-WebSocket-Protocol", protocol)
            self.end_headers()
            serve_websocket(self.connection, self.rfile.read, stream)
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            serve_chunked(self.connection, self.wfile.write, stream)

    def _log(self, namespace: str, name: str, query: dict[str, str]) -> None:
        logs = self.server.owner.pod_logs
        if self.command != "GET" or logs is None:
            self._send_status(status.failure(404, "the server could not find the requested resource (log)"))
            return
        try:
            path, container, follow = logs.open(namespace, name, query)
            if not follow:
                self._send(200, logs.text(path, query), "text/plain")
                return
        except ApiError as e:
            self._send_error(e)
            return
        except OSError as e:
            self._send_status(status.failure(500, f"cannot read the log: {e}"))
            return
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for chunk in logs.follow(namespace, name, container, path, self.server.owner.stopping):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away
            return

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            raise ValueError(f"Content-Length {length} is out of range")
        return self.rfile.read(length) if length else b""

    def _read_chunked_body(self) -> bytes:
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline().strip():  # trailers
                    pass
                return body
            body += self.rfile.read(size)
            self.rfile.readline()
            if len(body) > MAX_BODY:
                raise ValueError("the request body is too large")

    def _send_error(self, error: ApiError) -> None:
        code, body = status.from_error(error)
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(status.retry_after_seconds(error.retry_after))
        self._send_json(code, body, headers)

    def _send_status(self, body: Obj) -> None:
        self._send_json(int(body["code"]), body)

    def _send_json(self, code: int, body: Obj, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(body, separators=(",", ":")).encode(), "application/json", headers)

    def _send(self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _is_upgrade(headers: Any) -> bool:
    return is_upgrade(headers.get("Upgrade"), headers.get("Connection"))


def _server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context
