"""The keys table itself: consistent with the model, defaults valid, look-ups."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from k8s_backend.conf import keys
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.conf.spec import Kind, Use

# Model fields no key fills: the profile id is not a Spark property; the raw properties are kept as is.
NOT_FROM_KEYS = {"executor.default_profile.id", "spark_properties"}


def _resolve(path: str) -> Any:
    value: Any = KubernetesConf()
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _model_paths(cls: type, prefix: str = "") -> set[str]:
    paths = set()
    for field in attrs.fields(cls):
        path = prefix + field.name
        if isinstance(field.type, type) and attrs.has(field.type):
            paths |= _model_paths(field.type, path + ".")
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            paths.add(path)
        elif attrs.has(type(default)):
            paths |= _model_paths(type(default), path + ".")
        else:
            paths.add(path)
    return paths


def test_names_are_unique() -> None:
    names = [row.name for row in keys.KEYS]
    assert len(names) == len(set(names))


def test_every_field_exists_on_the_model() -> None:
    for row in keys.KEYS:
        if row.field is not None:
            _resolve(row.field)  # AttributeError names the bad path


def test_every_model_field_is_filled_by_a_key() -> None:
    filled = {row.field for row in keys.KEYS if row.field is not None}
    assert _model_paths(KubernetesConf) - filled == NOT_FROM_KEYS


def test_a_field_has_one_generic_key() -> None:
    generic = [row.field for row in keys.KEYS if row.field and not row.custom and row.use is Use.READ]
    assert len(generic) == len(set(generic))


def test_passed_through_keys_fill_nothing() -> None:
    for row in keys.KEYS:
        if row.use is Use.PASSTHROUGH:
            assert row.field is None, row.name


def test_fallbacks_are_known_keys() -> None:
    for row in keys.KEYS:
        for name in row.fallbacks:
            assert keys.key(name).kind is row.kind, (row.name, name)


@pytest.mark.parametrize("row", [r for r in keys.KEYS if r.default is not None], ids=lambda r: r.name)
def test_defaults_parse_and_pass_their_check(row: keys.Key) -> None:
    row.default_value()


@pytest.mark.parametrize(
    "row",
    [r for r in keys.KEYS if r.field and not r.custom and r.use is Use.READ and r.default is not None],
    ids=lambda r: r.name,
)
def test_model_defaults_are_the_table_defaults(row: keys.Key) -> None:
    assert _resolve(row.field or "") == row.default_value()


def test_families_are_prefix_rows_with_placeholders() -> None:
    for row in keys.KEYS:
        assert row.is_prefix == ("<" in row.name), row.name
        if row.is_prefix:
            assert row.prefix.endswith("."), row.name
            assert row.default is None


def test_key_and_family_lookups() -> None:
    assert keys.key("spark.kubernetes.allocation.batch.size").kind is Kind.INT
    with pytest.raises(KeyError):
        keys.key("spark.kubernetes.executor.label.<name>")
    assert (
        keys.family_of("spark.kubernetes.executor.label.team")
        is keys.KEYS[[r.name for r in keys.KEYS].index("spark.kubernetes.executor.label.<name>")]
    )
    assert keys.family_of("spark.kubernetes.executor.label.") is None
    # The most specific family wins: executor node selectors are not global ones.
    family = keys.family_of("spark.kubernetes.executor.node.selector.zone")
    assert family is not None and family.name == "spark.kubernetes.executor.node.selector.<label>"
    assert keys.is_known("spark.kubernetes.driver.label.x")
    assert not keys.is_known("spark.kubernetes.allocation.batchSize")


def test_unknown_keys_only_watch_spark_kubernetes() -> None:
    names = ["spark.kubernetes.allocation.batchSize", "spark.executor.whatever", "spark.kubernetes.namespace"]
    assert keys.unknown_keys(names) == ["spark.kubernetes.allocation.batchSize"]


@pytest.mark.parametrize(
    ("typo", "expected"),
    [
        ("spark.kubernetes.allocation.batchSize", "spark.kubernetes.allocation.batch.size"),
        ("spark.kubernetes.executor.podNamePrefx", "spark.kubernetes.executor.podNamePrefix"),
        ("spark.kubernetes.executor.labels.team", "spark.kubernetes.executor.label.<name>"),
        ("spark.kubernetes.container.image.pullpolicy", "spark.kubernetes.container.image.pullPolicy"),
    ],
)
def test_suggestions(typo: str, expected: str) -> None:
    assert keys.suggest(typo) == expected


def test_no_suggestion_for_unrelated_names() -> None:
    assert keys.suggest("spark.kubernetes.zzzzzzzzzzzzzzzzzzzzzzzz") is None
