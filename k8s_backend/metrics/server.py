"""The small HTTP server that serves one backend's registry at ``/metrics``.

Started by the backend's start(), stopped by its stop sequence: after :meth:`MetricsServer.stop` no
thread is left and the port is closed. A port already in use is a :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from k8s_backend.errors import ConfigError

log = logging.getLogger(__name__)

PORT_KEY = "spark.kubernetes.metrics.port"
HOST_KEY = "spark.kubernetes.metrics.host"


class _Handler(BaseHTTPRequestHandler):
    registry: CollectorRegistry  # set on the per-server subclass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            body, content_type, status = generate_latest(self.registry), CONTENT_TYPE_LATEST, 200
        elif path == "/":
            body, content_type, status = b"k8s_backend: see /metrics\n", "text/plain", 200
        else:
            body, content_type, status = b"not found: see /metrics\n", "text/plain", 404
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("metrics request: " + format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a scrape in flight never holds the process


class _Server6(_Server):
    address_family = socket.AF_INET6


class MetricsServer:
    """Serves ``registry`` at ``http://host:port/metrics`` from :meth:`start` until :meth:`stop`."""

    def __init__(self, registry: CollectorRegistry, *, host: str, port: int) -> None:
        self._registry = registry
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def address(self) -> tuple[str, int] | None:
        """The address served now (None before start and after stop)."""
        server = self._server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Bind and serve; a no-op once started or stopped. Raises :class:`ConfigError` when the port is
        taken or the address cannot be bound."""
        with self._lock:
            if self._server is not None or self._stopped:
                return
            handler = type("MetricsHandler", (_Handler,), {"registry": self._registry})
            server_class = _Server6 if ":" in self._host else _Server
            try:
                server = server_class((self._host, self._port), handler)
            except OSError as error:
                raise self._bind_error(error) from error
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.2},
                name="k8s-backend-metrics",
                daemon=True,
            )
            self._thread.start()
        log.info("Serving metrics at http://%s:%d/metrics", *(self.address or (self._host, self._port)))

    def _bind_error(self, error: OSError) -> ConfigError:
        where = f"{self._host}:{self._port}"
        if error.errno == errno.EADDRINUSE:
            return ConfigError(
                f"{PORT_KEY}={self._port}: the metrics server cannot listen on {where}, the port is already "
                "in use (by another application or backend in this process?); choose another port, or 0 "
                "(off)",
                key=PORT_KEY,
                value=self._port,
            )
        return ConfigError(
            f"{HOST_KEY}={self._host}: the metrics server cannot listen on {where}: "
            f"{error.strerror or error}; check {HOST_KEY} and {PORT_KEY}",
            key=HOST_KEY,
            value=self._host,
        )

    def stop(self) -> None:
        """Stop serving and close the port; idempotent, and no later start() serves again."""
        with self._lock:
            self._stopped = True
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is None:
            return
        server.shutdown()  # waits for serve_forever to return
        server.server_close()
        if thread is not None:
            thread.join()
        log.info("Stopped the metrics server")
