"""Kubernetes resource quantities (``500m``, ``1.5Gi``, ``1e3``, ``1E``), read as the API server reads them.

The one parser of the package: the configuration, the fake API server's validation, the process kubelet
and the Volcano PodGroup all go through :func:`parse_quantity`, so they accept and refuse the same texts.

What the API server (``k8s.io/apimachinery`` ``resource.ParseQuantity``) accepts, and so what is accepted
here: an optional sign, decimal digits with an optional fraction, then at most one suffix: binary SI
(``Ki Mi Gi Ti Pi Ei``), decimal SI (``n u m k M G T P E``) or a decimal exponent (``e3``, ``E-2``).
Nothing else: no blanks, no ``K``, no ``1e3k``, no ``NaN``. Like the API server, a value is rounded up
to a whole nano (``0.1n`` is ``1n``) and capped at 2^63-1 in magnitude (``1e30`` is 9223372036854775807).

The suffix arithmetic is ``kubernetes.utils.parse_quantity``'s; it is laxer than the API server (it takes
``" 1"``, ``1K``, ``1_000``, ``NaN``) and so only ever sees texts that passed the grammar below.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from decimal import ROUND_UP, Context, Decimal, DecimalException, localcontext

QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
"""The pattern the API server quotes when it refuses a quantity."""

MAX_QUANTITY = Decimal(2**63 - 1)
"""The largest magnitude the API server keeps; bigger values are capped to it."""

_NANO = Decimal("1e-9")
_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_GRAMMAR = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,18})?"  # exponents Decimal can hold
)


def parse_quantity(value: object, *, field: str = "quantity") -> Decimal:
    """The value of a quantity: a string, or a JSON number (which the API server reads as its text).

    ``field`` names where the value came from, for the error message. Raises :class:`ValueError` naming
    the field, the value and the accepted form.
    """
    text = _as_text(value)
    number = None if text is None else _value_of(text)
    if number is None:
        raise ValueError(
            f"{field}: {value!r} is not a Kubernetes quantity: use a number with at most one suffix "
            "(Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent such as e3) and no blanks, "
            "e.g. 1, 500m, 1.5Gi or 1e3"
        )
    return number


# Memoised: the same few texts ("1", "1408Mi") are read for every pod a thousand-pod allocation creates,
# schedules and admits, and the Decimal arithmetic below is the costly part. Decimals are immutable.
@functools.lru_cache(maxsize=4096)
def _value_of(text: str) -> Decimal | None:
    """The value of a quantity's text, or None when the API server would refuse it."""
    if _GRAMMAR.fullmatch(text) is None:
        return None
    # Imported here: kubernetes.utils pulls in the whole generated client, which code that only reads
    # configuration or runs against the fake should not pay for.
    from kubernetes.utils import quantity as client_quantity

    client_parse: Callable[[str], Decimal] = client_quantity.parse_quantity  # untyped upstream

    # Enough digits that no step rounds, and exponents as wide as Decimal allows: ``1e999999999`` must
    # be capped below, not overflow.
    exact = Context(prec=len(text) + 64, Emax=999_999_999_999_999_999, Emin=-999_999_999_999_999_999)
    with localcontext(exact):
        try:
            number = client_parse(text)
            magnitude = min(abs(number), MAX_QUANTITY)
            rounded = magnitude.quantize(_NANO, rounding=ROUND_UP)
            if rounded != magnitude:  # finer than a nano: rounded up, so that asking for some gets some
                magnitude = rounded
        except DecimalException:  # pragma: no cover - the grammar and the context rule it out
            return None
        return -magnitude if number < 0 else magnitude


def _as_text(value: object) -> str | None:
    """The quantity's text: strings as they are, JSON numbers as written; None for anything else."""
    if isinstance(value, bool):  # a bool is an int to Python, never a quantity to the API server
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)  # the shortest text that reads back as this float: 0.1, not 0.1000000000000000055
    return None


def is_quantity(value: object) -> bool:
    """Whether the API server would accept ``value`` as a quantity (negative values included)."""
    try:
        parse_quantity(value)
    except ValueError:
        return False
    return True


def cpu_millis(value: object, *, field: str = "cpu") -> int:
    """A CPU quantity in millicores, rounded up as the API server's ``MilliValue`` (``"0.5"`` -> 500)."""
    return math.ceil(parse_quantity(value, field=field) * 1000)


def memory_bytes(value: object, *, field: str = "memory") -> int:
    """A memory quantity in bytes, rounded up as the API server's ``Value`` (``"896Mi"`` -> 939524096)."""
    return math.ceil(parse_quantity(value, field=field))


def format_memory(num_bytes: int) -> str:
    """A byte count with the largest binary suffix that divides it (``939524096`` -> ``"896Mi"``)."""
    for power in range(len(_BINARY), 0, -1):
        unit, suffix = 1024**power, _BINARY[power - 1]
        if num_bytes >= unit and num_bytes % unit == 0:
            return f"{num_bytes // unit}{suffix}"
    return str(num_bytes)


def format_cpu(millis: int) -> str:
    """Millicores as whole cores when they divide (``2000`` -> ``"2"``), else ``1500`` -> ``"1500m"``."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def mib_quantity(mib: int) -> str:
    """A memory quantity in MiB as Kubernetes writes it: ``mib_quantity(896) == "896Mi"``."""
    if mib < 0:
        raise ValueError(f"a memory quantity cannot be negative: {mib} MiB")
    return f"{mib}Mi"


def multiply(quantity: str, times: int, *, field: str = "quantity") -> str:
    """``quantity`` taken ``times`` times, keeping its suffix: ``multiply("896Mi", 3) == "2688Mi"``.

    For sums such as a PodGroup's ``minResources`` (one executor's requests times the group size). The
    number keeps the suffix it was written with, so ``1e3`` doubles to ``2e3`` and ``0.1`` triples to
    ``0.3`` exactly. Negative quantities and counts are refused: a resource amount is never below zero.
    """
    if times < 0:
        raise ValueError(f"{field}: cannot multiply {quantity!r} by a negative count ({times})")
    if parse_quantity(quantity, field=field) < 0:
        raise ValueError(f"{field}: {quantity!r} is negative; a resource amount cannot be multiplied")
    match = _GRAMMAR.fullmatch(quantity)
    assert match is not None  # parse_quantity accepted it
    number = Decimal(match["number"])
    with localcontext(Context(prec=len(quantity) + len(str(times)) + 2)):  # exact: no rounding
        product = number * times
    text = str(int(product)) if product == product.to_integral_value() else format(product.normalize(), "f")
    return f"{text}{match['suffix'] or ''}"
