"""Executor rolling keys: parsed as Spark's ExecutorRollPlugin reads them, and refused (naming the key and
the fix) wherever Spark's plugin would silently do nothing."""

from __future__ import annotations

import pytest

from k8s_backend.conf.keys_roll import HOOK_KEY, INTERVAL_KEY, MIN_TASKS_KEY, POLICY_KEY, ROLL_PLUGIN
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError

ON = {"spark.plugins": f"com.example.Other, {ROLL_PLUGIN}", "spark.decommission.enabled": "true"}


def parse(props: dict[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(props)


def refused(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as error:
        parse(props)
    return error.value


def test_rolling_is_off_by_default() -> None:
    roll = parse({}).roll
    assert not roll.enabled
    assert (roll.interval, roll.policy, roll.min_tasks, roll.hook) == (0.0, "OUTLIER", 0, None)


def test_the_plugin_and_a_positive_interval_turn_rolling_on_with_spark_s_units_and_policy_names() -> None:
    roll = parse({**ON, INTERVAL_KEY: "90", POLICY_KEY: "add_time", MIN_TASKS_KEY: "3"}).roll
    assert roll.enabled
    assert (roll.interval, roll.policy, roll.min_tasks) == (90.0, "ADD_TIME", 3)
    assert parse({**ON, INTERVAL_KEY: "2min"}).roll.interval == 120.0


@pytest.mark.parametrize("name", [INTERVAL_KEY, POLICY_KEY, MIN_TASKS_KEY, HOOK_KEY])
def test_a_roll_key_without_the_plugin_is_refused_naming_it_and_the_plugin(name: str) -> None:
    value = {INTERVAL_KEY: "5s", POLICY_KEY: "ID", MIN_TASKS_KEY: "1", HOOK_KEY: "pkg.mod:pick"}[name]
    error = refused({name: value, "spark.decommission.enabled": "true"})
    assert error.key == name
    assert ROLL_PLUGIN in str(error) and "spark.plugins" in str(error)


@pytest.mark.parametrize("interval", [None, "0", "0s"])
def test_the_plugin_without_a_positive_interval_is_refused_naming_the_interval(interval: str | None) -> None:
    props = dict(ON) if interval is None else {**ON, INTERVAL_KEY: interval}
    error = refused(props)
    assert error.key == INTERVAL_KEY
    assert "positive interval" in str(error)


def test_the_plugin_without_decommissioning_is_refused_naming_spark_decommission_enabled() -> None:
    error = refused({"spark.plugins": ROLL_PLUGIN, INTERVAL_KEY: "5s"})
    assert error.key == "spark.decommission.enabled"
    assert "spark.decommission.enabled=true" in str(error)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (POLICY_KEY, "LARGEST"),
        (INTERVAL_KEY, "-1"),
        (MIN_TASKS_KEY, "-1"),
        (HOOK_KEY, "pkg.mod"),
        (HOOK_KEY, "pkg.mod:"),
        (HOOK_KEY, "pkg mod:f"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(name: str, value: str) -> None:
    error = refused({**ON, INTERVAL_KEY: "5s", name: value})
    assert error.key == name
    assert name in str(error)


def test_a_hook_and_a_policy_together_are_refused() -> None:
    error = refused({**ON, INTERVAL_KEY: "5s", POLICY_KEY: "ID", HOOK_KEY: "pkg.mod:pick"})
    assert error.key == POLICY_KEY
    assert "keep one of them" in str(error)


def test_a_hook_is_kept_as_written() -> None:
    assert parse({**ON, INTERVAL_KEY: "5s", HOOK_KEY: "pkg.rolling:pick"}).roll.hook == "pkg.rolling:pick"
