"""Spark-style parsing of property values, and Kubernetes quantities.

Spark's rules (``JavaUtils.byteStringAs`` / ``timeStringAs`` and ``ConfigHelpers``), kept here:

* sizes are whole numbers with an optional case-insensitive unit ``b k kb m mb g gb t tb p pb`` (binary
  multiples); a plain number is in the key's own unit (MiB for ``spark.executor.memory``); converting to
  a bigger unit truncates (``1kb`` is 0 MiB); fractions (``1.5g``) are refused;
* durations are whole numbers with an optional unit ``us ms s m min h d``; a plain number is in the key's
  own unit; converting to a bigger unit truncates (``1500ms`` is 1 s);
* booleans are ``true``/``false`` in any case; numbers are decimal. Surrounding blanks are ignored.

Every parser raises :class:`ConfigError` naming the key, the bad value and what is accepted.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from k8s_backend.errors import ConfigError
from k8s_backend.kube import quantity as kube_quantity

_LONG_MAX = 2**63 - 1

MAX_DURATION_DAYS = 36_500
"""The longest duration accepted (100 years). Longer ones overflow what the clock and the scheduler hold
(``threading.TIMEOUT_MAX`` is ~292 years, and deadlines add to the clock): ``stopTimeout=100000000000d``
was accepted, then every ``stop()`` raised ``OverflowError``."""

SIZE_UNITS: dict[str, int] = {
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "p": 2**50,
    "pb": 2**50,
}
_SIZE_UNIT_NAMES = {"b": "bytes", "k": "KiB", "m": "MiB", "g": "GiB", "t": "TiB", "p": "PiB"}

# Durations in microseconds, Spark's smallest unit.
TIME_UNITS: dict[str, int] = {
    "us": 1,
    "ms": 1_000,
    "s": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}
_TIME_UNIT_NAMES = {"us": "microseconds", "ms": "milliseconds", "s": "seconds", "min": "minutes"}

_WHOLE = re.compile(r"(-?)([0-9]+)([a-z]+)?")
_FRACTION = re.compile(r"-?[0-9]+\.[0-9]+[a-z]*")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _error(key: str, raw: str, what: str, fix: str) -> ConfigError:
    return ConfigError(f"{key}={raw} is not {what}: {fix}", key=key, value=raw)


def parse_bool(raw: str, *, key: str) -> bool:
    """``true`` or ``false``, any case (Spark's ``toBoolean``)."""
    text = raw.strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise _error(key, raw, "a boolean", "use true or false")


def parse_int(raw: str, *, key: str, bits: int = 32) -> int:
    """A whole decimal number that fits a signed ``bits``-bit integer (Spark's int/long confs)."""
    text = raw.strip()
    if not _INT.fullmatch(text):
        raise _error(key, raw, "an integer", "use a whole number such as 5")
    value = int(text)
    limit = 2 ** (bits - 1)
    if not -limit <= value < limit:
        raise _error(key, raw, f"a {bits}-bit integer", f"use a whole number below {limit}")
    return value


def parse_float(raw: str, *, key: str) -> float:
    """A finite decimal number such as ``0.1`` or ``1e-3``."""
    text = raw.strip()
    if not _FLOAT.fullmatch(text):
        raise _error(key, raw, "a number", "use a decimal number such as 0.1")
    value = float(text)
    if math.isinf(value):  # e.g. 1e400: a double cannot hold it
        raise _error(key, raw, "a finite number", "use a number below 1.8e308")
    return value


def parse_size(raw: str, *, key: str, unit: str = "b") -> int:
    """A size in ``unit`` (one of ``b k m g t p``), like Spark's ``byteStringAs(raw, unit)``.

    A leading ``-`` is kept (Spark accepts it; the key's check decides).
    """
    text = raw.strip().lower()
    plain = _SIZE_UNIT_NAMES[unit]
    fix = f"use a whole number with a unit such as 512m or 4g (a plain number means {plain})"
    match = _WHOLE.fullmatch(text)
    if match is None:
        if _FRACTION.fullmatch(text):
            fix = "fractional values are not supported; use a smaller unit, e.g. 1536m instead of 1.5g"
        raise _error(key, raw, "a size", fix)
    sign, digits, suffix = match.groups()
    if suffix is not None and suffix not in SIZE_UNITS:
        raise _error(key, raw, "a size", f"{suffix!r} is not a size unit; {fix}")
    number_bytes = int(digits) * SIZE_UNITS[suffix or unit]
    value = number_bytes // SIZE_UNITS[unit]
    if value > _LONG_MAX:
        raise _error(key, raw, "a size that fits in 64 bits", "use a smaller value")
    return -value if sign else value


def parse_size_mib(raw: str, *, key: str) -> int:
    """A size in MiB; a plain number is MiB (``spark.executor.memory`` and friends)."""
    return parse_size(raw, key=key, unit="m")


def parse_duration(raw: str, *, key: str, unit: str = "ms") -> int:
    """A duration in ``unit`` (one of ``us ms s min``), like Spark's ``timeStringAs(raw, unit)``."""
    text = raw.strip().lower()
    plain = _TIME_UNIT_NAMES[unit]
    fix = f"use a whole number with a unit such as 500ms, 30s, 2min, 3h or 1d (a plain number means {plain})"
    match = _WHOLE.fullmatch(text)
    if match is None:
        raise _error(key, raw, "a duration", fix)
    sign, digits, suffix = match.groups()
    if suffix is not None and suffix not in TIME_UNITS:
        raise _error(key, raw, "a duration", f"{suffix!r} is not a time unit; {fix}")
    value = int(digits) * TIME_UNITS[suffix or unit] // TIME_UNITS[unit]
    if value > MAX_DURATION_DAYS * TIME_UNITS["d"] // TIME_UNITS[unit]:
        raise _error(
            key,
            raw,
            f"a duration the clock and the scheduler can hold (at most {MAX_DURATION_DAYS}d, 100 years)",
            "use a smaller value",
        )
    return -value if sign else value


def parse_seconds(raw: str, *, key: str, unit: str = "ms") -> float:
    """A duration as float seconds, counted in ``unit`` first exactly as Spark does (so truncated)."""
    return parse_duration(raw, key=key, unit=unit) * TIME_UNITS[unit] / TIME_UNITS["s"]


def parse_list(raw: str) -> tuple[str, ...]:
    """A comma-separated list: items trimmed, empty items dropped (Spark's ``toSequence``)."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


# --- Kubernetes quantities: parsed by k8s_backend.kube.quantity, as the API server parses them ----------


def quantity_value(text: str) -> Decimal | None:
    """The value of a Kubernetes quantity (``500m``, ``1.5``, ``2Gi``, ``1e3``), or None if malformed."""
    try:
        return kube_quantity.parse_quantity(text)
    except ValueError:
        return None


def mib_quantity(mib: int) -> str:
    """A memory quantity in MiB as Kubernetes writes it: ``mib_quantity(896) == "896Mi"``."""
    return kube_quantity.mib_quantity(mib)


def parse_cpu_quantity(raw: str, *, key: str) -> str:
    """A Kubernetes CPU quantity (``1``, ``0.5``, ``500m``), normalised: whole cores or millicores.

    ``"0.5"`` becomes ``"500m"``, ``"2000m"`` becomes ``"2"``. It must be positive and a whole number of
    millicores (Kubernetes does not allow finer CPU precision than 1m). Blanks around it are ignored, as
    for every Spark property; blanks inside are refused, as by the API server.
    """
    value = quantity_value(raw.strip())
    fix = "use a positive number of cores such as 1, 0.5 or 500m"
    if value is None:
        raise _error(key, raw, "a Kubernetes CPU quantity", fix)
    millis = value * 1000
    if value <= 0:
        raise ConfigError(
            f"{key}={raw} is invalid: the CPU quantity must be positive; {fix}", key=key, value=raw
        )
    if millis != millis.to_integral_value():
        raise ConfigError(
            f"{key}={raw} is invalid: Kubernetes CPU quantities are counted in whole millicores (1m = 0.001)",
            key=key,
            value=raw,
        )
    return kube_quantity.format_cpu(int(millis))


def cpu_millis(quantity: str) -> int:
    """Millicores of a CPU quantity already checked by :func:`parse_cpu_quantity`."""
    return kube_quantity.cpu_millis(quantity.strip(), field="cpu")


# Spark-style size units that Kubernetes would misread (``m`` is milli) or refuse (``g``), mapped to
# the binary Kubernetes suffix they mean in Spark. ``k`` is valid in both and is left alone.
_SPARK_TO_BINARY = {
    "b": "",
    "kb": "Ki",
    "m": "Mi",
    "mb": "Mi",
    "g": "Gi",
    "gb": "Gi",
    "t": "Ti",
    "tb": "Ti",
    "p": "Pi",
    "pb": "Pi",
}


def parse_volume_size(raw: str, *, key: str) -> str:
    """A volume size (``options.sizeLimit``) as a Kubernetes quantity.

    As Spark's ``KubernetesVolumeUtils.verifySize``, a plain number below 1024 is refused ("Missing
    units?"). Kubernetes quantities (``10Gi``, ``500M``, ``2048``) are kept; Spark-style units that
    Kubernetes does not read as bytes are converted: ``512m`` -> ``512Mi``, ``10g`` -> ``10Gi``.
    """
    text = raw.strip()
    fix = "use a Kubernetes quantity such as 10Gi or 500Mi"
    if text.isdigit() and int(text) < 1024:
        raise ConfigError(
            f"{key}={raw} is invalid: Volume size `{text}` is smaller than 1KiB. Missing units? {fix}",
            key=key,
            value=raw,
        )
    whole = re.fullmatch(r"([0-9]+)([a-zA-Z]+)", text)
    if whole is not None and whole.group(2) in _SPARK_TO_BINARY:
        text = whole.group(1) + _SPARK_TO_BINARY[whole.group(2)]
    value = quantity_value(text)
    if value is None:
        raise _error(key, raw, "a size", f"{fix} (Spark-style 10g is read as 10Gi)")
    if value <= 0:
        raise ConfigError(
            f"{key}={raw} is invalid: a volume size must be positive; {fix}", key=key, value=raw
        )
    return text
