"""No key silently ignored: every passed-through key names who acts on it, or is refused naming itself."""

from __future__ import annotations

import pytest

from k8s_backend.conf import keys
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.conf.refused import REFUSED_PLUGINS, refusal_for
from k8s_backend.conf.spec import Key, Use
from k8s_backend.errors import ConfigError

PASSTHROUGH = [row for row in keys.KEYS if row.use is Use.PASSTHROUGH]
REFUSED_ROWS = [row for row in PASSTHROUGH if refusal_for(row.prefix if row.is_prefix else row.name)]


def a_value(row: Key) -> str:
    return row.default if row.default not in (None, "") else "1"


def test_every_passed_through_row_names_its_reader_or_says_it_is_refused() -> None:
    for row in PASSTHROUGH:
        refused = refusal_for(row.prefix if row.is_prefix else row.name) is not None
        assert row.doc.startswith("Refused under pyk8s://") == refused, row.name
        if not refused:
            # "Read by spark-submit" would describe Spark's submit, which does not run in cluster mode.
            assert "spark-submit" not in row.doc, row.name
            assert "k8s-backend" in row.doc or "Cluster mode" in row.doc, row.name


@pytest.mark.parametrize("row", REFUSED_ROWS, ids=lambda row: row.name)
def test_each_refused_key_is_a_config_error_naming_it_even_at_spark_default(row: Key) -> None:
    name = row.prefix + "x" if row.is_prefix else row.name
    with pytest.raises(ConfigError) as error:
        KubernetesConf.from_spark_conf({name: a_value(row)})
    assert error.value.key == name
    assert name in str(error.value) and "not supported under pyk8s://" in str(error.value)


def test_the_refused_list_covers_the_issue_s_silent_keys() -> None:
    for name in (
        "spark.kubernetes.executor.resizeInterval",
        "spark.kubernetes.executor.pvc.resizeFactor",
        "spark.kubernetes.allocation.recoveryMode.enabled",
        "spark.kubernetes.kerberos.dt-secret-name",
        "spark.kubernetes.kerberos.dt-secret-key",
    ):
        assert refusal_for(name) is not None, name


@pytest.mark.parametrize("plugin", sorted(REFUSED_PLUGINS))
def test_spark_plugins_that_do_not_act_under_pyk8s_are_refused(plugin: str) -> None:
    with pytest.raises(ConfigError, match="spark.plugins lists") as error:
        KubernetesConf.from_spark_conf({"spark.plugins": f"com.example.Other, {plugin}"})
    assert error.value.key == "spark.plugins"


def test_other_plugins_pass() -> None:
    KubernetesConf.from_spark_conf({"spark.plugins": "com.example.MyPlugin"})
