"""Scraping a backend's /metrics over HTTP, and waiting on conditions (never on the clock)."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

WAIT = 60.0  # generous: every wait ends on a condition

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int, host: str = "127.0.0.1") -> Samples:
    """Every sample of ``http://host:port/metrics``: (name, labels) -> value."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=WAIT) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when the series does not exist yet: a counter never incremented)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def port_is_closed(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) != 0


def wait_for(predicate: Callable[[], bool], what: str = "the condition") -> None:
    done = threading.Event()
    for _ in range(int(WAIT / 0.02)):
        if predicate():
            return
        done.wait(0.02)
    assert predicate(), f"timed out waiting for {what}"


def wait_for_metric(port: int, name: str, expected: float, **labels: str) -> Samples:
    """Scrape until ``name{labels}`` equals ``expected``; returns that scrape."""
    last: dict[str, Any] = {}

    def matches() -> bool:
        last["samples"] = scrape(port)
        return value(last["samples"], name, **labels) == expected

    try:
        wait_for(matches, f"{name}{labels} == {expected}")
    except AssertionError:
        seen = value(last.get("samples", {}), name, **labels)
        raise AssertionError(f"{name}{labels} stayed {seen}, expected {expected}") from None
    samples: Samples = last["samples"]
    return samples


def labels_of(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (n, labels) in samples if n == name]
