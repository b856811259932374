"""Serving an open watch: as a chunked HTTP stream (one JSON event per line) or over a WebSocket.

Either way a helper thread notices when the client goes away and closes the backing watch, so a quiet
watch does not keep its server thread forever. A watch that fails once it is open (410 Gone for a
too-old resourceVersion, an injected fault) is reported as an ERROR event carrying a ``Status``, as the
real API server does, and then the stream ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator

from k8s_backend.kube.port import ApiError, WatchStream
from k8s_backend.local.apiserver import status
from k8s_backend.local.apiserver.websocket import CLOSE_NORMAL, OP_CLOSE, OP_PING, WebSocket
from k8s_backend.memkube.watch import shared_events

log = logging.getLogger(__name__)

CLOSE_HANDSHAKE_WAIT = 2.0
"""Seconds to wait for the client's close frame after ours before dropping the connection."""


def event_lines(stream: WatchStream) -> Iterator[bytes]:
    """The watch's events as JSON lines, ending with an ERROR event if the watch fails."""
    try:
        for event in shared_events(stream):  # encoded, never modified: no copy needed
            yield _line(event.type, event.object)
    except ApiError as e:
        yield _line("ERROR", status.from_error(e)[1])
    except Exception as e:  # a failure of the backing API: report it as the server would, then end
        log.exception("Watch failed inside the backing API")
        yield _line("ERROR", status.failure(500, f"internal error: {e}"))


def serve_chunked(sock: socket.socket, write: Callable[[bytes], object], stream: WatchStream) -> None:
    """Write events as HTTP chunks (headers already sent) until the watch or the client ends."""
    monitor = _watch_peer(_socket_data(sock), stream)
    try:
        for line in event_lines(stream):
            write(b"%x\r\n%s\r\n" % (len(line), line))
        write(b"0\r\n\r\n")
    except OSError:
        pass  # the client went away
    finally:
        stream.close()
        _shutdown(sock)
        monitor.join()


def serve_websocket(sock: socket.socket, read: Callable[[int], bytes], stream: WatchStream) -> None:
    """Send events as text frames (handshake already answered); answer pings; close cleanly."""
    ws = WebSocket(sock, read)

    def client_frames() -> Iterator[bytes]:
        while True:
            frame = ws.receive()
            if frame is None:
                return
            if frame.opcode == OP_CLOSE:
                code = int.from_bytes(frame.payload[:2], "big") if len(frame.payload) >= 2 else CLOSE_NORMAL
                ws.send_close(code)
                return
            if frame.opcode == OP_PING:
                ws.pong(frame.payload)
            yield frame.payload

    reader = _watch_peer(client_frames(), stream)
    try:
        for line in event_lines(stream):
            ws.send_text(line)
    except OSError:
        pass  # the client went away or started closing
    finally:
        stream.close()
        ws.send_close(CLOSE_NORMAL)
        reader.join(CLOSE_HANDSHAKE_WAIT)
        _shutdown(sock)
        reader.join()


def _line(event_type: str, obj: object) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _socket_data(sock: socket.socket) -> Iterator[bytes]:
    while data := sock.recv(4096):
        yield data


def _watch_peer(client_data: Iterator[bytes], stream: WatchStream) -> threading.Thread:
    """Start a thread that drains what the client sends until it hangs up, then closes ``stream``."""

    def run() -> None:
        try:
            for _ in client_data:
                pass  # a watch client has nothing to say; only its hanging up matters
        except OSError:
            pass
        finally:
            stream.close()

    thread = threading.Thread(target=run, name="apiserver-watch-peer", daemon=True)
    thread.start()
    return thread


def _shutdown(sock: socket.socket) -> None:
    # Wakes the peer-reading thread (a blocked recv returns) and tells the client we are done.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
