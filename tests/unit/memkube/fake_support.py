"""Shared by the fake's tests."""

from __future__ import annotations

TEST_NAMESPACES = ("ns", "other", "elsewhere", "team", "a-ns", "b-ns", "kept", "a", "b")
"""The namespaces the tests create objects in: a fake, as a real server, refuses creates in others."""
