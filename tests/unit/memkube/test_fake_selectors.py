"""Label and field selectors: parsing, matching, formatting and the errors for bad input."""

from __future__ import annotations

import pytest

from k8s_backend.kube.labels import label_key_errors, label_value_errors, selector_from_labels
from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, BadRequestError
from k8s_backend.memkube.selectors import (
    COMMON_FIELDS,
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    FieldRequirement,
    LabelSelector,
    Requirement,
    field_value,
    parse_field_selector,
    parse_label_selector,
    supported_fields,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ()),
        ("   ", ()),
        ("a=b", (Requirement("a", EQUALS, frozenset({"b"})),)),
        ("a==b", (Requirement("a", EQUALS, frozenset({"b"})),)),
        ("a = b", (Requirement("a", EQUALS, frozenset({"b"})),)),
        ("a=", (Requirement("a", EQUALS, frozenset({""})),)),
        ("a!=b", (Requirement("a", NOT_EQUALS, frozenset({"b"})),)),
        ("a in (x, y)", (Requirement("a", IN, frozenset({"x", "y"})),)),
        ("a notin (x)", (Requirement("a", NOT_IN, frozenset({"x"})),)),
        ("a", (Requirement("a", EXISTS),)),
        ("!a", (Requirement("a", DOES_NOT_EXIST),)),
        ("! a", (Requirement("a", DOES_NOT_EXIST),)),
        (
            "spark-app-selector=app-1,spark-role=executor,spark-exec-inactive!=true",
            (
                Requirement("spark-app-selector", EQUALS, frozenset({"app-1"})),
                Requirement("spark-role", EQUALS, frozenset({"executor"})),
                Requirement("spark-exec-inactive", NOT_EQUALS, frozenset({"true"})),
            ),
        ),
        ("example.com/team=a_b.c", (Requirement("example.com/team", EQUALS, frozenset({"a_b.c"})),)),
        ("in=in", (Requirement("in", EQUALS, frozenset({"in"})),)),
    ],
)
def test_parse_label_selector(text: str, expected: tuple[Requirement, ...]) -> None:
    assert parse_label_selector(text).requirements == expected


@pytest.mark.parametrize(
    ("text", "labels", "selected"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a=", {"a": ""}, True),
        ("a!=b", {"a": "c"}, True),
        ("a!=b", {}, True),  # like the server: a missing label is "not b"
        ("a!=b", {"a": "b"}, False),
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x,y)", {}, False),
        ("a notin (x,y)", {"a": "z"}, True),
        ("a notin (x,y)", {}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "1"}, False),
        ("!a", {"b": "1"}, True),
        ("!a", {"a": "1"}, False),
        ("a=1,b=2", {"a": "1", "b": "2"}, True),
        ("a=1,b=2", {"a": "1"}, False),
    ],
)
def test_label_selector_matching(text: str, labels: dict[str, str], selected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is selected


def test_matches_object_reads_metadata_labels_and_tolerates_none() -> None:
    selector = parse_label_selector("a=1")
    assert selector.matches_object({"metadata": {"labels": {"a": "1"}}})
    assert not selector.matches_object({"metadata": {}})
    assert not selector.matches(None)
    assert LabelSelector().matches(None)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a=b=c", "expected ',' or the end"),
        ("a in x", "expected '(' after 'in'"),
        ("a in (x", "expected ',' or ')'"),
        ("a in ()", "cannot be empty"),
        ("a in (x y)", "expected ',' or ')'"),
        ("a b", "expected an operator"),
        ("=b", "expected a label key"),
        ("a,", "expected a label key at position 2, found the end"),
        ("!", "expected a label key after '!'"),
        ("a>1", "not supported"),
        ("Bad Key=1", "expected an operator"),
        ("-a=1", "invalid label key '-a'"),
        ("a=-b", "invalid label value '-b'"),
        ("a=" + "x" * 64, "no more than 63 characters"),
        ("/a=1", "prefix part must be non-empty"),
        ("Example.com/a=1", "invalid label key"),
    ],
)
def test_label_selector_errors_name_the_problem_and_the_syntax(text: str, fragment: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_label_selector(text)
    message = str(caught.value)
    assert fragment in message
    assert repr(text) in message  # the selector itself
    assert "key in (v1,v2)" in message  # how to write one
    assert caught.value.status == 400


@pytest.mark.parametrize("text", ["a=1,b!=2", "a in (x,y)", "!a", "a", "a notin (x)", "x.io/y="])
def test_label_selector_round_trips_through_str(text: str) -> None:
    parsed = parse_label_selector(text)
    assert parse_label_selector(str(parsed)) == parsed


def test_selector_from_labels() -> None:
    text = selector_from_labels({"spark-role": "executor", "spark-app-selector": "a1"})
    assert text == "spark-role=executor,spark-app-selector=a1"
    assert parse_label_selector(text).matches(
        {"spark-role": "executor", "spark-app-selector": "a1", "x": "y"}
    )


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("a", True),
        ("a.b-c_d", True),
        ("example.com/a", True),
        ("x" * 63, True),
        ("x" * 64, False),
        ("a/b/c", False),
        ("-a", False),
        ("", False),
        ("example.com/", False),
    ],
)
def test_label_key_rules(key: str, ok: bool) -> None:
    assert (not label_key_errors(key)) is ok


@pytest.mark.parametrize(
    ("value", "ok"), [("", True), ("a", True), ("A-1_b.c", True), ("a-", False), ("a b", False)]
)
def test_label_value_rules(value: str, ok: bool) -> None:
    assert (not label_value_errors(value)) is ok


# --- field selectors ------------------------------------------------------------------------------

POD = {"metadata": {"name": "p1", "namespace": "ns"}, "status": {"phase": "Pending"}, "spec": {}}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("", True),
        ("metadata.name=p1", True),
        ("metadata.name==p1", True),
        ("metadata.name!=p1", False),
        ("metadata.namespace=ns,status.phase=Pending", True),
        ("status.phase=Running", False),
        ("status.phase!=Running", True),
        ("spec.nodeName=", True),  # an absent field is the empty string
        ("spec.nodeName!=", False),
    ],
)
def test_field_selector_matching(text: str, selected: bool) -> None:
    assert parse_field_selector(text).matches(POD) is selected


def test_field_selector_values_may_escape_separators() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert selector.requirements == (FieldRequirement("metadata.name", "a,b=c\\d"),)
    assert parse_field_selector(str(selector)) == selector


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("metadata.name", "has no operator"),
        ("spec.containers=x", "field label not supported: 'spec.containers'"),
        (r"metadata.name=a\x", "invalid escape sequence"),
    ],
)
def test_field_selector_errors(text: str, fragment: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_field_selector(text)
    assert fragment in str(caught.value)
    assert repr(text) in str(caught.value)


def test_supported_fields_depend_on_the_kind() -> None:
    assert "status.phase" in supported_fields(PODS)
    assert "status.phase" in supported_fields(NAMESPACES)
    assert supported_fields(CONFIG_MAPS) == COMMON_FIELDS
    with pytest.raises(BadRequestError, match=r"supported fields are metadata\.name, metadata\.namespace"):
        parse_field_selector("status.phase=Running", supported_fields(CONFIG_MAPS))


def test_field_value_reads_dotted_paths() -> None:
    assert field_value(POD, "status.phase") == "Pending"
    assert field_value(POD, "status.phase.deeper") == ""
    assert field_value({"spec": {"n": 3}}, "spec.n") == "3"
