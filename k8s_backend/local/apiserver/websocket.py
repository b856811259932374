"""A minimal server side of RFC 6455 WebSockets, enough to serve Kubernetes watches.

fabric8 (Spark's client) opens watches as WebSocket upgrades; each watch event is one text frame with
the event's JSON. The server answers pings, and honours and sends close frames. No extensions, no
fragmentation of server frames (clients do not fragment control frames).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading
from collections.abc import Callable

import attrs

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # fixed by RFC 6455 section 1.3

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_PROTOCOL_ERROR = 1002


class WebSocketProtocolError(Exception):
    """The peer sent something that is not a WebSocket frame."""


@attrs.frozen
class Frame:
    """One frame, payload unmasked."""

    opcode: int
    payload: bytes
    fin: bool = True


def is_upgrade(upgrade: str | None, connection: str | None) -> bool:
    """Whether ``Upgrade`` and ``Connection`` request headers ask to switch to the WebSocket protocol."""
    upgrade = (upgrade or "").lower()
    connection = (connection or "").lower()
    return upgrade == "websocket" and "upgrade" in [t.strip() for t in connection.split(",")]


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` answer to a ``Sec-WebSocket-Key``."""
    # RFC 6455 fixes SHA-1 here: a handshake checksum, not a security measure.
    digest = hashlib.sha1((key.strip() + GUID).encode("ascii"), usedforsecurity=False).digest()
    return base64.b64encode(digest).decode("ascii")


def choose_protocol(offered: str | None) -> str | None:
    """The subprotocol to echo: the client's first choice (frames carry the same JSON either way)."""
    if not offered:
        return None
    first = offered.split(",")[0].strip()
    return first or None


def encode_frame(opcode: int, payload: bytes, *, mask: bytes | None = None) -> bytes:
    """A single final frame; clients must ``mask`` (4 bytes), servers must not."""
    head = bytearray([0x80 | opcode])
    mask_bit = 0x80 if mask is not None else 0
    size = len(payload)
    if size < 126:
        head.append(mask_bit | size)
    elif size < 1 << 16:
        head.append(mask_bit | 126)
        head += struct.pack("!H", size)
    else:
        head.append(mask_bit | 127)
        head += struct.pack("!Q", size)
    if mask is None:
        return bytes(head) + payload
    return bytes(head) + mask + _apply_mask(payload, mask)


def read_frame(read: Callable[[int], bytes]) -> Frame | None:
    """The next frame from ``read(n)`` (a buffered reader's read); None at end of stream."""
    head = _read_exact(read, 2)
    if head is None:
        return None
    fin = bool(head[0] & 0x80)
    opcode = head[0] & 0x0F
    masked = bool(head[1] & 0x80)
    size = head[1] & 0x7F
    if size == 126:
        size = struct.unpack("!H", _required(read, 2))[0]
    elif size == 127:
        size = struct.unpack("!Q", _required(read, 8))[0]
    mask = _required(read, 4) if masked else None
    payload = _required(read, size) if size else b""
    return Frame(opcode, _apply_mask(payload, mask) if mask else payload, fin)


def close_payload(code: int, reason: str = "") -> bytes:
    return struct.pack("!H", code) + reason.encode("utf-8")[:120]


class WebSocket:
    """The server end of an upgraded connection. Sending is thread-safe."""

    def __init__(self, sock: socket.socket, read: Callable[[int], bytes]) -> None:
        self._sock = sock
        self._read = read
        self._send_lock = threading.Lock()
        self._close_sent = False

    def send_text(self, text: str | bytes) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        self._send(OP_TEXT, data)

    def pong(self, payload: bytes) -> None:
        self._send(OP_PONG, payload)

    def send_close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Start (or answer) the closing handshake; later sends are dropped."""
        with self._send_lock:
            if self._close_sent:
                return
            self._close_sent = True
            with contextlib.suppress(OSError):
                self._sock.sendall(encode_frame(OP_CLOSE, close_payload(code, reason)))

    def receive(self) -> Frame | None:
        """The next frame from the client; None when the connection ends."""
        try:
            return read_frame(self._read)
        except (OSError, ValueError, WebSocketProtocolError):
            return None

    def _send(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            if self._close_sent:
                raise ConnectionError("the WebSocket is closing")
            self._sock.sendall(encode_frame(opcode, payload))


def _apply_mask(payload: bytes, mask: bytes) -> bytes:
    # XOR with the repeated 4-byte key, done on big integers: far faster than a Python byte loop.
    size = len(payload)
    key = (mask * (size // 4 + 1))[:size]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")


def _read_exact(read: Callable[[int], bytes], size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = read(size - len(data))
        if not chunk:
            if data:
                raise WebSocketProtocolError("connection closed inside a frame")
            return None
        data += chunk
    return data


def _required(read: Callable[[int], bytes], size: int) -> bytes:
    data = _read_exact(read, size)
    if data is None:
        raise WebSocketProtocolError("connection closed inside a frame")
    return data
