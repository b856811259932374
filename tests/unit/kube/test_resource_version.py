"""resourceVersions (k8s_backend.kube.resource_version): read strictly as the API server reads them.

The snapshot store (a client: unknown versions are not compared) and the fake API server (400 for a
version it cannot read) used to parse them each their own way; both now go through this module.
"""

from __future__ import annotations

import pytest

from k8s_backend.kube.resource_version import (
    MAX_RESOURCE_VERSION,
    is_resource_version,
    newer,
    parse_resource_version,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", 1),
        ("42", 42),
        ("0", 0),  # "any version" in a request: for the server to interpret, still a number here
        ("007", 7),
        ("18446744073709551615", MAX_RESOURCE_VERSION),
        (42, 42),  # an already parsed version is kept
        (0, 0),
    ],
)
def test_versions_parse(value: object, expected: int) -> None:
    assert parse_resource_version(value) == expected
    assert is_resource_version(value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "opaque",
        " 42",  # int() used to take these four in the snapshot store
        "42 ",
        "+42",
        "1_000",
        "-1",
        "4.2",
        "٣",  # str.isdigit() used to let these two into the fake server (the second then crashed int())
        "²",
        "18446744073709551616",  # beyond an unsigned 64-bit integer
        "1" * 30,
        -1,
        2**64,
        True,
        4.0,
        [1],
    ],
)
def test_anything_else_is_unknown(value: object) -> None:
    assert parse_resource_version(value) is None
    assert not is_resource_version(value)


@pytest.mark.parametrize(
    ("candidate", "current", "expected"),
    [
        ("10", "9", True),  # numerically, not as text
        ("9", "10", False),
        ("5", "5", False),
        (10, "9", True),
        ("10", 9, True),
        ("10", None, False),  # an unknown version is neither newer nor older
        (None, "10", False),
        ("opaque", "1", False),
        ("1", "opaque", False),
        (None, None, False),
    ],
)
def test_newer(candidate: str | int | None, current: str | int | None, expected: bool) -> None:
    assert newer(candidate, current) is expected
