"""Fixtures for the backend suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backend_harness import Harness, make_harness


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = make_harness()
    yield h
    h.backend.stop()
