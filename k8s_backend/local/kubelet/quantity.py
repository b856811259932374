"""Kubernetes resource quantities ("500m", "896Mi", "1.5", "1e3") as integers the kubelet can add up."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


def parse_quantity(value: str | int | float, *, field: str = "quantity") -> Decimal:
    """The numeric value of a Kubernetes quantity.

    ``field`` names where the value came from, for the error message.
    """
    if isinstance(value, bool):
        raise ValueError(f"{field}: {value!r} is not a Kubernetes quantity (use e.g. '1', '500m', '1Gi')")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(
            f"{field}: {value!r} is not a Kubernetes quantity (use e.g. '1', '500m', '896Mi', '1Gi')"
        )
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * (Decimal(10) ** int(suffix[1:]))
        return Decimal(number) * _SUFFIXES[suffix]
    except InvalidOperation as exc:  # pragma: no cover - the regex already rules this out
        raise ValueError(f"{field}: {value!r} is not a Kubernetes quantity") from exc


def cpu_millis(value: str | int | float, *, field: str = "cpu") -> int:
    """A CPU quantity in millicores, rounded up as the API server does (``"0.5"`` → 500)."""
    return math.ceil(parse_quantity(value, field=field) * 1000)


def memory_bytes(value: str | int | float, *, field: str = "memory") -> int:
    """A memory quantity in bytes, rounded up (``"896Mi"`` → 939524096)."""
    return math.ceil(parse_quantity(value, field=field))


def format_memory(num_bytes: int) -> str:
    """A short human form of a byte count (``939524096`` → ``"896Mi"``) for messages."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = int(_SUFFIXES[suffix])
        if num_bytes >= unit and num_bytes % unit == 0:
            return f"{num_bytes // unit}{suffix}"
    return str(num_bytes)


def format_cpu(millis: int) -> str:
    """A short form of millicores (``1500`` → ``"1500m"``, ``2000`` → ``"2"``)."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
