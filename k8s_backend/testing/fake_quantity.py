"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``), as the API server parses them."""

from __future__ import annotations

import functools
import re
from fractions import Fraction

QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
"""The pattern the API server quotes in its error messages."""

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?$"
)

_MULTIPLIERS: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse_quantity(value: object) -> Fraction | None:
    """The exact value of a quantity (a string, or a JSON number), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)  # pods repeat the same few quantities; Fraction arithmetic is slow
def _parse_text(text: str) -> Fraction | None:
    match = _QUANTITY.match(text)
    if match is None:
        return None
    number = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Fraction(10) ** int(suffix[1:])
    return number * _MULTIPLIERS[suffix]
