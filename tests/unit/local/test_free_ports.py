"""Free ports for the control plane's and the node's processes: distinct even when the kernel reuses."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from k8s_backend.local.control_plane.processes import free_port, free_ports


class _LowestFirst:
    """A socket whose ``bind(("127.0.0.1", 0))`` gets the lowest port not bound now, as a kernel may do:
    a port just released is handed out again."""

    bound: set[int] = set()

    def __init__(self, *_: Any) -> None:
        self.port: int | None = None

    def bind(self, address: tuple[str, int]) -> None:
        self.port = next(port for port in range(40000, 40100) if port not in self.bound)
        self.bound.add(self.port)

    def getsockname(self) -> tuple[str, int]:
        assert self.port is not None
        return "127.0.0.1", self.port

    def close(self) -> None:
        self.bound.discard(self.port or 0)

    def __enter__(self) -> _LowestFirst:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@pytest.fixture
def lowest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    _LowestFirst.bound = set()
    monkeypatch.setattr(socket, "socket", _LowestFirst)


@pytest.mark.usefixtures("lowest_first")
def test_two_ports_asked_one_by_one_can_be_the_same() -> None:
    # Why free_ports exists: etcd was once given one port for its client and its peer URL.
    assert free_port() == free_port()


@pytest.mark.usefixtures("lowest_first")
def test_ports_asked_together_are_distinct_and_all_released() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    assert _LowestFirst.bound == set()


def test_free_ports_are_bindable_on_loopback() -> None:
    for port in free_ports(4):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))
