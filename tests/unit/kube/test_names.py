"""The API server's name rules (kube/names.py, and the label rules built on them in kube/labels.py):
what each accepts, its length limit, its exact messages, and that the conf checks accept exactly what
the fake API server's validation accepts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from k8s_backend.conf import syntax
from k8s_backend.kube import names
from k8s_backend.kube.labels import label_key_errors, label_value_errors
from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, Obj, Resource
from k8s_backend.testing import fake_validation

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
ENV_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used "
    "for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)
QUALIFIED_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TOO_LONG_63 = "must be no more than 63 characters"
TOO_LONG_253 = "must be no more than 253 characters"


# --- each rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "0", "my-name", "123-abc", "a--b", "a" * 63])
def test_dns1123_labels_that_are_valid(name: str) -> None:
    assert names.dns1123_label_errors(name) == []
    assert names.is_dns1123_label(name)


@pytest.mark.parametrize("name", ["", "-a", "a-", "A", "a.b", "a_b", "a b", "é", "abc\n", "\nabc"])
def test_dns1123_labels_that_are_not(name: str) -> None:
    assert names.dns1123_label_errors(name) == [LABEL_MESSAGE]
    assert not names.is_dns1123_label(name)


def test_a_dns1123_label_of_64_characters_is_too_long_and_nothing_else() -> None:
    assert names.dns1123_label_errors("a" * 64) == [TOO_LONG_63]
    assert names.dns1123_label_errors("A" * 64) == [TOO_LONG_63, LABEL_MESSAGE]


@pytest.mark.parametrize(
    "name", ["a", "example.com", "a.b-c.d", "1.2.3", "a" * 253, ("a" * 63 + ".") * 3 + "a"]
)
def test_dns1123_subdomains_that_are_valid(name: str) -> None:
    assert names.dns1123_subdomain_errors(name) == []
    assert names.is_dns1123_subdomain(name)


@pytest.mark.parametrize("name", ["", ".", "a.", ".a", "a..b", "A.b", "a_b", "a.-b", "a/b", "a.b\n"])
def test_dns1123_subdomains_that_are_not(name: str) -> None:
    assert names.dns1123_subdomain_errors(name) == [SUBDOMAIN_MESSAGE]
    assert not names.is_dns1123_subdomain(name)


def test_a_dns1123_subdomain_of_254_characters_is_too_long() -> None:
    assert names.dns1123_subdomain_errors("a" * 254) == [TOO_LONG_253]
    assert names.dns1123_subdomain_errors("a" * 253 + "-") == [TOO_LONG_253, SUBDOMAIN_MESSAGE]


@pytest.mark.parametrize("name", ["a", "my-name", "abc-123", "a" * 63])
def test_dns1035_labels_that_are_valid(name: str) -> None:
    assert names.dns1035_label_errors(name) == []
    assert names.is_dns1035_label(name)


@pytest.mark.parametrize("name", ["", "1svc", "1", "-a", "a-", "A", "a.b", "svc\n"])
def test_dns1035_labels_that_are_not(name: str) -> None:
    assert names.dns1035_label_errors(name) == [DNS1035_MESSAGE]
    assert not names.is_dns1035_label(name)
    assert names.dns1035_label_errors("a" * 64) == [TOO_LONG_63]


@pytest.mark.parametrize("key", ["k", "key.name", "KEY_NAME", "key-name", ".hidden", "a..b", "9", "a" * 253])
def test_config_keys_that_are_valid(key: str) -> None:
    assert names.config_key_errors(key) == []
    assert names.is_config_key(key)


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("", [CONFIG_KEY_MESSAGE]),
        ("bad key", [CONFIG_KEY_MESSAGE]),
        ("a/b", [CONFIG_KEY_MESSAGE]),
        ("key\n", [CONFIG_KEY_MESSAGE]),
        (".", ["must not be '.'"]),
        ("..", ["must not be '..'"]),
        ("..data", ["must not start with '..'"]),
        ("a" * 254, [TOO_LONG_253]),
        ("..a" + "/" * 251, [TOO_LONG_253, CONFIG_KEY_MESSAGE, "must not start with '..'"]),
    ],
)
def test_config_keys_that_are_not(key: str, errors: list[str]) -> None:
    assert names.config_key_errors(key) == errors
    assert not names.is_config_key(key)


@pytest.mark.parametrize(
    "name", ["A", "_", "GOOD_1", "my.var-x", "MY_ENV.NAME", "-x", ".x", "a..b", "x" * 300]
)
def test_env_var_names_that_are_valid(name: str) -> None:
    assert names.env_var_name_errors(name) == []
    assert names.is_env_var_name(name)


@pytest.mark.parametrize(
    ("name", "errors"),
    [
        ("", [ENV_MESSAGE]),
        ("1BAD", [ENV_MESSAGE]),
        ("BAD NAME", [ENV_MESSAGE]),
        ("A=B", [ENV_MESSAGE]),
        ("A\n", [ENV_MESSAGE]),
        (".", ["must not be '.'"]),
        ("..", ["must not be '..'"]),
        ("..X", ["must not start with '..'"]),
    ],
)
def test_env_var_names_that_are_not(name: str, errors: list[str]) -> None:
    assert names.env_var_name_errors(name) == errors
    assert not names.is_env_var_name(name)


def test_regex_error_spells_the_examples_as_the_server_does() -> None:
    assert names.regex_error("m", "p") == "m (regex used for validation is 'p')"
    assert names.regex_error("m", "p", "a") == "m (e.g. 'a', regex used for validation is 'p')"
    assert names.regex_error("m", "p", "a", "b") == "m (e.g. 'a',  or 'b', regex used for validation is 'p')"


# --- label keys and values (kube/labels.py, on these rules) --------------------------------------------


@pytest.mark.parametrize(
    "key", ["a", "MyName", "my.name", "123-abc", "example.com/MyName", "spark-app-selector", "a/" + "b" * 63]
)
def test_label_keys_that_are_valid(key: str) -> None:
    assert label_key_errors(key) == []


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("", ["name part must be non-empty", f"name part {QUALIFIED_MESSAGE}"]),
        ("-a", [f"name part {QUALIFIED_MESSAGE}"]),
        ("a\n", [f"name part {QUALIFIED_MESSAGE}"]),
        ("/a", ["prefix part must be non-empty"]),
        ("a/", ["name part must be non-empty", f"name part {QUALIFIED_MESSAGE}"]),
        ("Example.com/a", [f"prefix part {SUBDOMAIN_MESSAGE}"]),
        ("a" * 254 + "/a", [f"prefix part {TOO_LONG_253}"]),
        ("b" * 64, [f"name part {TOO_LONG_63}"]),
    ],
)
def test_label_keys_that_are_not(key: str, errors: list[str]) -> None:
    assert label_key_errors(key) == errors


def test_a_label_key_with_two_slashes_is_not_a_qualified_name() -> None:
    assert label_key_errors("a/b/c") == [
        f"a qualified name {QUALIFIED_MESSAGE} with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    ]


@pytest.mark.parametrize("value", ["", "a", "MyValue", "my_value", "12345", "a.b-c_d", "v" * 63])
def test_label_values_that_are_valid(value: str) -> None:
    assert label_value_errors(value) == []


@pytest.mark.parametrize("value", ["-a", "a_", "bad value", "a/b", "v\n"])
def test_label_values_that_are_not(value: str) -> None:
    assert label_value_errors(value) == [VALUE_MESSAGE]
    assert label_value_errors("v" * 64) == [TOO_LONG_63]


# --- the conf checks and the fake API server agree, rule by rule ----------------------------------------

SAMPLES = [
    "",
    "a",
    "A",
    "0",
    "1svc",
    "my-name",
    "-a",
    "a-",
    "a_b",
    "a.b",
    "a..b",
    "a/b",
    "a/b/c",
    "/a",
    "a/",
    "example.com/MyName",
    "Example.com/a",
    ".",
    "..",
    "..data",
    ".hidden",
    "bad key",
    "x\n",
    "é",
    "a" * 63,
    "a" * 64,
    "a" * 253,
    "a" * 254,
    "a/" + "b" * 63,
    "a/" + "b" * 64,
    ("a" * 63 + ".") * 3 + "a",
]


def _fake_accepts(resource: Resource, obj: Obj, field: str) -> bool:
    """Whether the fake's validation of ``obj`` finds nothing wrong with ``field``."""
    errors = fake_validation.validate_object(resource, obj)
    return not [e for e in errors if e.field == field or e.field.startswith(f"{field}[")]


def _fake_accepts_name(resource: Resource, name: str) -> bool:
    return _fake_accepts(resource, {"metadata": {"name": name, "namespace": "ns"}}, "metadata.name")


def _fake_accepts_config_key(key: str) -> bool:
    obj: Obj = {"metadata": {"name": "c", "namespace": "ns"}, "data": {key: "v"}}
    return _fake_accepts(CONFIG_MAPS, obj, "data")


def _fake_accepts_label(key: str, value: str) -> bool:
    obj: Obj = {"metadata": {"name": "c", "namespace": "ns", "labels": {key: value}}}
    return _fake_accepts(CONFIG_MAPS, obj, "metadata.labels")


Accepts = Callable[[str], bool]
RULES: dict[str, tuple[Accepts, Accepts]] = {
    "DNS-1123 subdomain (pod names)": (
        lambda s: syntax.dns_subdomain_problem(s) is None,
        lambda s: _fake_accepts_name(PODS, s),
    ),
    "DNS-1123 label (namespace names)": (
        lambda s: syntax.dns_label_problem(s) is None,
        lambda s: _fake_accepts_name(NAMESPACES, s),
    ),
    "secret / config map key": (
        lambda s: syntax.secret_key_problem(s) is None,
        _fake_accepts_config_key,
    ),
    "label key": (lambda s: syntax.label_key_problem(s) is None, lambda s: _fake_accepts_label(s, "v")),
    "label value": (lambda s: syntax.label_value_problem(s) is None, lambda s: _fake_accepts_label("k", s)),
    # The fake does not validate env, so conf is held to the same shared rule the fake would use.
    "environment variable name": (syntax.is_env_name, names.is_env_var_name),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_conf_accepts_exactly_what_the_fake_api_server_accepts(rule: str) -> None:
    conf_accepts, fake_accepts = RULES[rule]
    disagreements = [s for s in SAMPLES if conf_accepts(s) != fake_accepts(s)]
    assert disagreements == []
    # The samples exercise both answers of every rule, or the comparison would prove little.
    assert {conf_accepts(s) for s in SAMPLES} == {True, False}


def test_conf_keeps_its_own_phrasing_for_spark_users() -> None:
    assert syntax.dns_label_problem("a" * 64) == "must be at most 63 characters (it has 64)"
    assert syntax.dns_subdomain_problem("a" * 238, 237) == "must be at most 237 characters (it has 238)"
    assert syntax.label_key_problem("/a") == "has an empty prefix before '/'"
    assert syntax.label_value_problem("v" * 64) == "must be at most 63 characters (it has 64)"
    assert syntax.secret_key_problem("bad key") == "must be letters, digits, '-', '_' and '.'"
    assert syntax.secret_key_problem("..data") == "must not be '.' or '..', nor start with '..'"
    assert syntax.ENV_NAME_PATTERN == names.ENV_VAR_NAME_PATTERN
