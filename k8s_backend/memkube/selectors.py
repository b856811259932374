"""The API server's label and field selectors, as InMemoryKubernetes applies them: parsing and matching.

Selectors are built (never parsed) by the backend in :mod:`k8s_backend.kube.labels`.

Label selectors follow the API server's grammar: comma-separated requirements, each one of
``key=value`` / ``key==value``, ``key!=value``, ``key in (v1,v2)``, ``key notin (v1,v2)``, ``key``
(exists) and ``!key`` (does not exist). As on the server, ``!=`` and ``notin`` also match objects
without the label. Field selectors are ``field=value`` / ``field==value`` / ``field!=value`` terms on a
small per-kind set of fields. Anything else raises :class:`BadRequestError` (HTTP 400), naming the
selector, what is wrong and how to write it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from k8s_backend.kube.labels import label_key_errors, label_value_errors
from k8s_backend.kube.port import NAMESPACES, PODS, BadRequestError, Obj, Resource

EQUALS = "="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"

@attrs.frozen
class Requirement:
    """One term of a label selector."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if self.operator in (EQUALS, IN):
            return present and labels[self.key] in self.values
        # != and notin: like the API server, an object without the label matches.
        return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (EQUALS, NOT_EQUALS):
            (value,) = self.values
            return f"{self.key}{self.operator}{value}"
        return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"


@attrs.frozen
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected."""
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)

    def matches_object(self, obj: Obj) -> bool:
        """Whether an object (its ``metadata.labels``) is selected."""
        return self.matches(obj.get("metadata", {}).get("labels"))

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# --- label selector parsing -----------------------------------------------------------------------

_SPECIAL = "=!,()<>"
_IDENT = "identifier"
_END = "end of selector"


@attrs.frozen
class _Token:
    kind: str  # _IDENT, _END, or the symbol itself ("=", "==", "!=", "!", ",", "(", ")", "<", ">")
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in _SPECIAL:
            two = text[i : i + 2]
            symbol = two if two in ("==", "!=") else char
            tokens.append(_Token(symbol, symbol, i))
            i += len(symbol)
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            tokens.append(_Token(_IDENT, text[start:i], start))
    tokens.append(_Token(_END, "", len(text)))
    return tokens


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0

    def error(self, problem: str) -> BadRequestError:
        return BadRequestError(
            f"invalid label selector {self.text!r}: {problem}; write comma-separated terms such as "
            "'key=value', 'key!=value', 'key in (v1,v2)', 'key notin (v1,v2)', 'key' or '!key'"
        )

    def peek(self) -> _Token:
        return self.tokens[self.index]

    def take(self) -> _Token:
        token = self.tokens[self.index]
        if token.kind != _END:
            self.index += 1
        return token

    def expect(self, kind: str, what: str) -> _Token:
        token = self.take()
        if token.kind != kind:
            found = repr(token.text) if token.kind != _END else "the end"
            raise self.error(f"expected {what} at position {token.position}, found {found}")
        return token

    def parse(self) -> LabelSelector:
        requirements: list[Requirement] = []
        if self.peek().kind == _END:
            return LabelSelector()
        while True:
            requirements.append(self.requirement())
            token = self.take()
            if token.kind == _END:
                return LabelSelector(tuple(requirements))
            if token.kind != ",":
                raise self.error(
                    f"expected ',' or the end at position {token.position}, found {token.text!r}"
                )

    def requirement(self) -> Requirement:
        token = self.take()
        if token.kind == "!":
            key = self.expect(_IDENT, "a label key after '!'").text
            return self.checked(Requirement(key, DOES_NOT_EXIST))
        if token.kind != _IDENT:
            found = repr(token.text) if token.kind != _END else "the end"
            raise self.error(f"expected a label key at position {token.position}, found {found}")
        key = token.text
        following = self.peek()
        if following.kind in (",", _END):
            return self.checked(Requirement(key, EXISTS))
        if following.kind in ("<", ">"):
            raise self.error(f"operator {following.kind!r} (gt/lt) is not supported")
        if following.kind in ("=", "==", "!="):
            self.take()
            value = self.take() if self.peek().kind == _IDENT else _Token(_IDENT, "", following.position)
            operator = NOT_EQUALS if following.kind == "!=" else EQUALS
            return self.checked(Requirement(key, operator, frozenset([value.text])))
        if following.kind == _IDENT and following.text in (IN, NOT_IN):
            self.take()
            return self.checked(Requirement(key, following.text, self.value_set(following.text)))
        raise self.error(
            f"expected an operator (=, ==, !=, in, notin) after {key!r} at position {following.position}, "
            f"found {following.text!r}"
        )

    def value_set(self, operator: str) -> frozenset[str]:
        self.expect("(", f"'(' after {operator!r}")
        values: list[str] = []
        while True:
            token = self.take()
            if token.kind == ")":
                if not values:
                    raise self.error(f"the value set of {operator!r} cannot be empty")
                return frozenset(values)
            if token.kind == _IDENT:
                values.append(token.text)
                after = self.take()
                if after.kind == ")":
                    return frozenset(values)
                if after.kind != ",":
                    raise self.error(
                        f"expected ',' or ')' at position {after.position}, found {after.text!r}"
                    )
            else:
                found = repr(token.text) if token.kind != _END else "the end"
                raise self.error(f"expected a value or ')' at position {token.position}, found {found}")

    def checked(self, requirement: Requirement) -> Requirement:
        key_problems = label_key_errors(requirement.key)
        if key_problems:
            raise self.error(f"invalid label key {requirement.key!r}: {'; '.join(key_problems)}")
        for value in sorted(requirement.values):
            value_problems = label_value_errors(value)
            if value_problems:
                raise self.error(f"invalid label value {value!r}: {'; '.join(value_problems)}")
        return requirement


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a label selector; :class:`BadRequestError` with a clear message when it is malformed."""
    return _LabelParser(text).parse()


# --- field selectors ------------------------------------------------------------------------------

COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
POD_FIELDS = COMMON_FIELDS | {
    "status.phase",
    "status.podIP",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
}
NAMESPACE_FIELDS = COMMON_FIELDS | {"status.phase"}


def supported_fields(resource: Resource) -> frozenset[str]:
    """The fields a field selector may use for this kind (as on the API server)."""
    if (resource.group, resource.plural) == (PODS.group, PODS.plural):
        return POD_FIELDS
    if (resource.group, resource.plural) == (NAMESPACES.group, NAMESPACES.plural):
        return NAMESPACE_FIELDS
    return COMMON_FIELDS


def field_value(obj: Obj, path: str) -> str:
    """The string value of a dotted field of an object ("" when absent, like the API server)."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    return str(current)


@attrs.frozen
class FieldRequirement:
    """One term of a field selector."""

    field: str
    value: str
    negated: bool = False

    def matches(self, obj: Obj) -> bool:
        return (field_value(obj, self.field) == self.value) != self.negated

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{'!=' if self.negated else '='}{escaped}"


@attrs.frozen
class FieldSelector:
    """A parsed field selector; the empty selector matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Obj) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _unescape(value: str, selector: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        if value[i] == "\\":
            nxt = value[i + 1 : i + 2]
            if nxt not in ("\\", ",", "="):
                raise BadRequestError(
                    f"invalid field selector {selector!r}: invalid escape sequence '\\{nxt}' in value "
                    f"{value!r}; only '\\\\', '\\,' and '\\=' are allowed"
                )
            out.append(nxt)
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _find_operator(term: str) -> tuple[int, str] | None:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for operator in ("!=", "==", "="):
            if term.startswith(operator, i):
                return i, operator
        i += 1
    return None


def parse_field_selector(text: str, supported: Iterable[str] = POD_FIELDS) -> FieldSelector:
    """Parse a field selector whose fields must be among ``supported``.

    :class:`BadRequestError` when a term is malformed or uses a field the kind does not support.
    """
    allowed = frozenset(supported)
    if not text.strip():
        return FieldSelector()
    requirements: list[FieldRequirement] = []
    for term in _split_unescaped(text, ","):
        found = _find_operator(term)
        if found is None:
            raise BadRequestError(
                f"invalid field selector {text!r}: term {term!r} has no operator; "
                "write 'field=value', 'field==value' or 'field!=value'"
            )
        position, operator = found
        field = term[:position].strip()
        if field not in allowed:
            raise BadRequestError(
                f"invalid field selector {text!r}: field label not supported: {field!r}; "
                f"supported fields are {', '.join(sorted(allowed))}"
            )
        value = _unescape(term[position + len(operator) :], text)
        requirements.append(FieldRequirement(field, value, negated=operator == "!="))
    return FieldSelector(tuple(requirements))
