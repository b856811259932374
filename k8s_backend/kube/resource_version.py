"""resourceVersions: the one place that reads them as numbers and orders them.

Kubernetes documents a resourceVersion as an opaque string, but every API server we talk to (etcd3
storage, the local server, the fake) writes an unsigned 64-bit decimal integer and refuses anything else
in a request (``strconv.ParseUint(rv, 10, 64)``). So a version is read as a number only when it is
exactly such an integer: ASCII digits, no sign, no blanks, at most 2^64-1. Anything else is "unknown",
and an unknown version is never newer or older than another: the caller then keeps what it has.
"""

from __future__ import annotations

import re
from typing import TypeAlias

MAX_RESOURCE_VERSION = 2**64 - 1
"""The largest version an API server writes (etcd's revision is an unsigned 64-bit integer)."""

# ASCII only: str.isdigit() also takes "²" and "٣", which int() then refuses or misreads.
_DIGITS = re.compile(r"[0-9]{1,20}")

ResourceVersion: TypeAlias = str | int | None
"""A version as found in ``metadata.resourceVersion`` or a list's metadata, or an already parsed one."""


def parse_resource_version(value: object) -> int | None:
    """The version as an integer, or None when absent or not a decimal integer (so not comparable).

    Strings are read strictly (``"42"`` -> 42; ``" 42"``, ``"-1"``, ``"abc"`` -> None); an int, such as
    one parsed before, is kept when in range. ``"0"`` is 0: in a request it means "any version", which is
    for the server to interpret, not for this function.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
    else:
        return None
    return number if 0 <= number <= MAX_RESOURCE_VERSION else None


def is_resource_version(value: object) -> bool:
    """Whether ``value`` is a version an API server would accept in a request."""
    return parse_resource_version(value) is not None


def newer(candidate: ResourceVersion, current: ResourceVersion) -> bool:
    """Whether ``candidate`` is known to be newer than ``current``: False when either is unknown."""
    new, old = parse_resource_version(candidate), parse_resource_version(current)
    return new is not None and old is not None and new > old
