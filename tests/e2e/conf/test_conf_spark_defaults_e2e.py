"""Our keys table against the installed Spark's own ConfigEntry objects (starts a JVM, ~4 s).

For every key the table says Spark defines: the entry exists, its default (``defaultValueString()``)
is ours, its fallback is ours, and a plain number means the same unit for Spark and for us. Also: every
``spark.kubernetes.*`` entry Spark defines is in our table. See docs/spark-4.3-defaults.md.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from k8s_backend.conf import keys
from k8s_backend.conf.spec import Kind

pytestmark = pytest.mark.e2e

# Scala objects whose initialisation registers the entries we compare with.
CONFIG_OBJECTS = (
    "org.apache.spark.deploy.k8s.Config$",
    "org.apache.spark.internal.config.package$",
    "org.apache.spark.internal.config.Python$",
)
_UNITS = {Kind.DURATION_MS: 1000, Kind.DURATION_S: 1, Kind.DURATION_MIN: 1 / 60}


@pytest.fixture(scope="module")
def jvm() -> Iterator[Any]:
    pyspark = pytest.importorskip("pyspark")
    if not pyspark.__version__.startswith("4.3."):
        pytest.skip(f"the table holds Spark 4.3's defaults; pyspark {pyspark.__version__} is installed")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime")
    from pyspark.java_gateway import launch_gateway

    gateway: Any = launch_gateway()  # type: ignore[no-untyped-call]
    try:
        for name in CONFIG_OBJECTS:
            gateway.jvm.java.lang.Class.forName(name).getField("MODULE$").get(None)
        yield gateway.jvm
    finally:
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.stdin.close()  # the launcher JVM exits when its stdin closes
            proc.wait(timeout=30)


def _entry(jvm: Any, name: str) -> Any:
    return jvm.org.apache.spark.internal.config.ConfigEntry.findEntry(name)


SPARK_ROWS = [r for r in keys.KEYS if r.has_spark_entry]


@pytest.mark.parametrize("row", SPARK_ROWS, ids=lambda r: r.name)
def test_default_matches_spark(jvm: Any, row: keys.Key) -> None:
    entry = _entry(jvm, row.name)
    assert entry is not None, f"Spark has no ConfigEntry {row.name}; set has_spark_entry=False"
    spark = str(entry.defaultValueString())
    if row.spark_default is not None:
        # We knowingly differ (reason in the table); Spark must still say what we recorded.
        assert row.spark_default == "*" or spark == row.spark_default, (spark, row.spark_default_reason)
        return
    if spark.startswith("<value of "):
        assert row.default is None
        assert row.fallbacks[:1] == (spark[len("<value of ") : -1],)
    elif spark == "<undefined>":
        assert row.default is None  # (a fallback may still be applied by Spark's code, as by ours)
    else:
        assert row.default is not None, f"Spark's default is {spark!r}"
        assert row.convert(spark) == row.default_value(), (
            f"Spark's default is {spark!r}, ours {row.default!r}"
        )


@pytest.mark.parametrize(
    "row",
    [r for r in SPARK_ROWS if r.kind in (*_UNITS, Kind.SIZE_MIB, Kind.SIZE_BYTES)],
    ids=lambda r: r.name,
)
def test_values_are_counted_in_the_same_unit(jvm: Any, row: keys.Key) -> None:
    # Spark converts to the entry's unit, as we do: 10min is 600000 for a ms key, 600 for a seconds key.
    from py4j.protocol import Py4JJavaError

    sample = "10min" if row.kind in _UNITS else "1g"
    try:
        value = _entry(jvm, row.name).valueConverter().apply(sample)
    except Py4JJavaError as error:
        # A few timeouts are plain int properties in Spark, documented as milliseconds.
        assert "should be a/an 'int' value" in str(error.java_exception)
        assert row.kind is Kind.DURATION_MS
        return
    if hasattr(value, "isDefined"):  # an OptionalConfigEntry gives Some(value)
        value = value.get()
    ours = row.convert(sample)
    assert value == (round(ours * _UNITS[row.kind]) if row.kind in _UNITS else ours)


def test_every_spark_kubernetes_entry_is_in_the_table(jvm: Any) -> None:
    config = jvm.java.lang.Class.forName("org.apache.spark.deploy.k8s.Config$")
    module = config.getField("MODULE$").get(None)
    entry_class = jvm.java.lang.Class.forName("org.apache.spark.internal.config.ConfigEntry")
    no_args = jvm.java.lang.Class.forName("java.lang.Object")
    spark_names = set()
    for method in config.getDeclaredMethods():
        if method.getParameterCount() == 0 and entry_class.isAssignableFrom(method.getReturnType()):
            spark_names.add(
                str(method.invoke(module, jvm.java.lang.reflect.Array.newInstance(no_args, 0)).key())
            )
    assert len(spark_names) >= 95  # 4.3.0 defines 95
    assert sorted(spark_names - set(keys.KEYS_BY_NAME)) == []
