"""The pytest plugin's options, without Spark: defaults, ini settings, and bad values named in the error."""

from __future__ import annotations

import re

import pytest

from k8s_backend.spark import pytest_plugin

pytest_plugins = ("pytester",)

SHOW_CONF = """
from k8s_backend.spark.pytest_plugin import session_conf

def test_show(pytestconfig):
    master, conf = session_conf(pytestconfig)
    print("MASTER", master)
    for key in sorted(conf):
        print("CONF", key, conf[key])
"""


def conf_lines(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makepyfile(test_show=SHOW_CONF)
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    # With -s the first print follows the test file's name on its line.
    found = [re.search(r"(MASTER|CONF) .*", line) for line in result.outlines]
    return [match.group(0) for match in found if match]


def test_the_defaults_are_pyk8s_local_with_two_executors_of_1g(pytester: pytest.Pytester) -> None:
    lines = conf_lines(pytester)
    assert "MASTER pyk8s://local" in lines
    assert "CONF spark.executor.instances 2" in lines
    assert "CONF spark.executor.memory 1g" in lines


def test_options_choose_master_count_memory_and_properties(pytester: pytest.Pytester) -> None:
    lines = conf_lines(
        pytester,
        "--pyk8s-master=pyk8s://https://10.0.0.1:6443",
        "--pyk8s-executors=3",
        "--pyk8s-executor-memory=512m",
        "--pyk8s-conf=spark.sql.shuffle.partitions=4",
        "--pyk8s-conf",
        "spark.executor.cores=2",
    )
    assert "MASTER pyk8s://https://10.0.0.1:6443" in lines
    assert "CONF spark.executor.instances 3" in lines
    assert "CONF spark.executor.memory 512m" in lines
    assert "CONF spark.sql.shuffle.partitions 4" in lines
    assert "CONF spark.executor.cores 2" in lines


def test_ini_settings_are_defaults_the_command_line_overrides(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\npyk8s_executors = 4\npyk8s_executor_memory = 2g\n"
        "pyk8s_conf =\n    spark.a=1\n    spark.b=2\n"
    )
    lines = conf_lines(pytester, "--pyk8s-executors=1")
    assert "CONF spark.executor.instances 1" in lines
    assert "CONF spark.executor.memory 2g" in lines
    assert "CONF spark.a 1" in lines and "CONF spark.b 2" in lines


@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("--pyk8s-executors=0", "--pyk8s-executors='0'"),
        ("--pyk8s-executors=two", "--pyk8s-executors='two'"),
        ("--pyk8s-executor-memory=lots", "--pyk8s-executor-memory='lots'"),
        ("--pyk8s-master=local[2]", "--pyk8s-master='local[2]'"),
        ("--pyk8s-conf=spark.nothing", "--pyk8s-conf 'spark.nothing'"),
    ],
)
def test_a_bad_option_stops_the_run_naming_it(pytester: pytest.Pytester, option: str, named: str) -> None:
    pytester.makepyfile(test_never="def test_never(spark):\n    raise AssertionError('ran')\n")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any(named in line for line in result.errlines), result.errlines


def test_the_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = "\n".join(result.outlines)
    for name in ("--pyk8s-master", "--pyk8s-executors", "--pyk8s-executor-memory", "--pyk8s-conf"):
        assert name in text


def test_the_plugin_is_the_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    found = [e for e in entry_points(group="pytest11") if e.name == "k8s_backend"]
    assert [e.value for e in found] == [pytest_plugin.__name__]
