"""What one row of the keys table is: :class:`Key`, its value :class:`Kind`, and :class:`Check` rules.

The rows themselves live in the ``keys_*`` modules and are gathered by :mod:`k8s_backend.conf.keys`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from k8s_backend.conf import syntax, units
from k8s_backend.errors import ConfigError


class Kind(enum.Enum):
    """How a raw property string is read; the value says the Python type in the docs."""

    STRING = "string"
    BOOL = "boolean"
    INT = "int"
    LONG = "long"
    FLOAT = "number"
    SIZE_MIB = "size (plain number: MiB)"
    SIZE_BYTES = "size (plain number: bytes)"
    DURATION_MS = "duration (plain number: ms)"
    DURATION_S = "duration (plain number: s)"
    DURATION_MIN = "duration (plain number: min)"
    LIST = "comma-separated list"
    CPU = "Kubernetes CPU quantity"
    PREFIX = "family of keys"


class Use(enum.Enum):
    """Who reads a key."""

    READ = "read by k8s_backend"
    PASSTHROUGH = "read by Spark or spark-submit; k8s_backend passes it through"


@attrs.frozen
class Check:
    """A rule on a parsed value: ``problem(value)`` is None when fine, else a phrase saying what is wrong."""

    problem: Callable[[Any], str | None]
    accepted: str  # what is accepted, for the docs

    @classmethod
    def that(cls, test: Callable[[Any], bool], accepted: str) -> Check:
        """A check from a predicate; the message is ``accepted``."""
        return cls(lambda value: None if test(value) else accepted, accepted)


def greater_than(bound: float, accepted: str | None = None) -> Check:
    return Check.that(lambda v: v > bound, accepted or f"must be greater than {bound:g}")


def at_least(bound: float, accepted: str | None = None) -> Check:
    return Check.that(lambda v: v >= bound, accepted or f"must be {bound:g} or more")


def between(low: float, high: float, accepted: str | None = None) -> Check:
    return Check.that(lambda v: low <= v <= high, accepted or f"must be between {low:g} and {high:g}")


def one_of(*choices: str, accepted: str | None = None) -> Check:
    listed = ", ".join(choices)
    return Check.that(lambda v: v in choices, accepted or f"must be one of {listed} (case-sensitive)")


def not_empty(accepted: str = "must not be empty (leave the key unset instead)") -> Check:
    return Check.that(lambda v: v != "", accepted)


def all_of(*checks: Check) -> Check:
    """Every check in turn; the first problem found is reported."""

    def problem(value: Any) -> str | None:
        for check in checks:
            found = check.problem(value)
            if found is not None:
                return found
        return None

    return Check(problem, "; ".join(check.accepted for check in checks))


def each(check: Check) -> Check:
    """``check`` on every item of a list value."""

    def problem(items: Sequence[Any]) -> str | None:
        for item in items:
            found = check.problem(item)
            if found is not None:
                return f"{item!r} {found}"
        return None

    return Check(problem, f"each item {check.accepted}")


def syntax_rule(rule: Callable[[str], str | None], accepted: str) -> Check:
    """A check from a :mod:`k8s_backend.conf.syntax` rule (returns a problem phrase or None)."""
    return Check(rule, accepted)


DNS_LABEL = syntax_rule(syntax.dns_label_problem, "must be a DNS-1123 label (at most 63 characters)")
DNS_SUBDOMAIN = syntax_rule(syntax.dns_subdomain_problem, "must be a DNS-1123 subdomain")
LABEL_KEY = syntax_rule(syntax.label_key_problem, "must be a Kubernetes label key")
LABEL_VALUE = syntax_rule(syntax.label_value_problem, "must be a Kubernetes label value")


@attrs.frozen
class Key:
    """One Spark property (or, for :attr:`Kind.PREFIX`, a family such as ``...label.<name>``).

    ``field`` is the dotted path of the :class:`~k8s_backend.conf.model.KubernetesConf` attribute the key
    fills (e.g. ``"allocation.batch_size"``). Keys with ``custom=True`` are turned into that field by
    dedicated code in the parser because other keys take part (fallback chains with extra rules,
    cross-key checks, prefix families). ``fallbacks`` are keys read, in order, when this one is unset.
    ``spark_default`` records Spark's own ConfigEntry default where ours knowingly differs, and why.
    """

    name: str
    kind: Kind
    default: str | None
    doc: str
    field: str | None = None
    check: Check | None = None
    fallbacks: tuple[str, ...] = ()
    use: Use = Use.READ
    custom: bool = False
    spark_default: str | None = None
    spark_default_reason: str = ""
    has_spark_entry: bool = True

    @property
    def is_prefix(self) -> bool:
        return self.kind is Kind.PREFIX

    @property
    def prefix(self) -> str:
        """For a family (``spark.kubernetes.executor.label.<name>``): the part before the first ``<``."""
        return self.name.split("<", 1)[0]

    def convert(self, raw: str) -> Any:
        """Parse ``raw`` by kind and apply the check; :class:`ConfigError` names this key and ``raw``."""
        value = _PARSERS[self.kind](raw, self.name)
        if self.check is not None:
            problem = self.check.problem(value)
            if problem is not None:
                raise ConfigError(f"{self.name}={raw} is invalid: {problem}", key=self.name, value=raw)
        return value

    def default_value(self) -> Any:
        """The parsed default, or None when the key has no default."""
        return None if self.default is None else self.convert(self.default)


def _not_a_value(raw: str, key: str) -> Any:
    raise ConfigError(f"{key} names a family of keys, not a single value", key=key, value=raw)


_PARSERS: dict[Kind, Callable[[str, str], Any]] = {
    Kind.STRING: lambda raw, key: raw,
    Kind.BOOL: lambda raw, key: units.parse_bool(raw, key=key),
    Kind.INT: lambda raw, key: units.parse_int(raw, key=key),
    Kind.LONG: lambda raw, key: units.parse_int(raw, key=key, bits=64),
    Kind.FLOAT: lambda raw, key: units.parse_float(raw, key=key),
    Kind.SIZE_MIB: lambda raw, key: units.parse_size(raw, key=key, unit="m"),
    Kind.SIZE_BYTES: lambda raw, key: units.parse_size(raw, key=key, unit="b"),
    Kind.DURATION_MS: lambda raw, key: units.parse_seconds(raw, key=key, unit="ms"),
    Kind.DURATION_S: lambda raw, key: units.parse_seconds(raw, key=key, unit="s"),
    Kind.DURATION_MIN: lambda raw, key: units.parse_seconds(raw, key=key, unit="min"),
    Kind.LIST: lambda raw, key: units.parse_list(raw),
    Kind.CPU: lambda raw, key: units.parse_cpu_quantity(raw, key=key),
    Kind.PREFIX: _not_a_value,
}
