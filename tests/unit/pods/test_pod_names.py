"""Name rules: app ids, resource name prefixes, labels, pod names, hostnames, DNS-1123 checks."""

from __future__ import annotations

import re

import pytest

from k8s_backend import KubernetesConf
from k8s_backend.common.clock import ManualClock
from k8s_backend.errors import ConfigError
from k8s_backend.pods.java_opts import split_command_string
from k8s_backend.pods.names import (
    app_name_label,
    executor_hostname,
    executor_pod_name,
    is_dns1123_label,
    is_dns1123_subdomain,
    new_app_id,
    resource_name_prefix,
    substitute_ids,
    unique_id,
    validate_pod_name_prefix,
)


def fixed_bytes(n: int) -> bytes:
    return bytes([0xAB, 0x01, 0xFF][:n])


def test_new_app_id() -> None:
    app_id = new_app_id()
    assert re.fullmatch(r"spark-[0-9a-f]{32}", app_id)
    assert new_app_id() != app_id


def test_unique_id_is_random_hex_then_masked_millis() -> None:
    assert unique_id(random_bytes=fixed_bytes, clock=ManualClock(1.5)) == "ab01ff5dc"
    # Only the low 40 bits of the milliseconds are kept.
    assert unique_id(random_bytes=fixed_bytes, clock=ManualClock(1099511628)) == "ab01ffe0"  # 2**40 + 224 ms


@pytest.mark.parametrize(
    ("app_name", "expected"),
    [
        ("spark", "spark-ab01ff5dc"),
        ("  My App  ", "my-app-ab01ff5dc"),
        ("a__b..c", "a-b-c-ab01ff5dc"),
        ("-leading", "leading-ab01ff5dc"),
        ("123abc", "x23abc-ab01ff5dc"),
        ("Ünïcode", "n-code-ab01ff5dc"),
    ],
)
def test_resource_name_prefix(app_name: str, expected: str) -> None:
    assert resource_name_prefix(app_name, random_bytes=fixed_bytes, clock=ManualClock(1.5)) == expected


def test_resource_name_prefix_is_random_by_default() -> None:
    assert resource_name_prefix("a") != resource_name_prefix("a")


def test_app_name_label() -> None:
    assert app_name_label("My Spark App") == "my-spark-app"
    assert app_name_label("-x-") == "x"
    long = app_name_label("a" * 62 + "-b")
    assert long == "a" * 62
    assert len(app_name_label("x" * 100)) == 63


def test_executor_pod_name_and_hostname() -> None:
    assert executor_pod_name("base", 7) == "base-exec-7"
    assert executor_hostname("base-exec-7") == "base-exec-7"
    long = executor_pod_name("a" * 100, 12)
    assert executor_hostname(long) == ("a" * 100 + "-exec-12")[-63:]
    # Leading non-word characters go, other unsafe runs become "_".
    assert executor_hostname("-.-abc.def-exec-1") == "abc_def-exec-1"


def test_dns1123_checks() -> None:
    assert is_dns1123_label("abc-1")
    assert not is_dns1123_label("abc_1")
    assert not is_dns1123_label("-abc")
    assert not is_dns1123_label("a" * 64)
    assert is_dns1123_subdomain("a.b-c.d")
    assert is_dns1123_subdomain("a" * 253)
    assert not is_dns1123_subdomain("a" * 254)
    assert not is_dns1123_subdomain("A.b")


@pytest.mark.parametrize("invalid", ["_123", "spark_exec", "spark@", "a" * 238, "-a", "Upper"])
def test_invalid_pod_name_prefixes(invalid: str) -> None:  # SPARK-35460
    with pytest.raises(ConfigError, match=r"spark\.kubernetes\.executor\.podNamePrefix") as err:
        validate_pod_name_prefix(invalid)
    assert err.value.key == "spark.kubernetes.executor.podNamePrefix"


def test_valid_pod_name_prefix() -> None:
    assert validate_pod_name_prefix("a" * 237) == "a" * 237
    assert validate_pod_name_prefix("my-app-1") == "my-app-1"


@pytest.mark.parametrize("prefix", ["a.b", "my.app-1"])
def test_a_prefix_whose_hostnames_no_api_server_accepts_is_refused_up_front(prefix: str) -> None:
    with pytest.raises(ConfigError, match=r"executor hostnames are derived from it \('.*_.*-exec-1'") as err:
        validate_pod_name_prefix(prefix)
    assert err.value.key == "spark.kubernetes.executor.podNamePrefix"


def test_a_dotted_prefix_fails_the_configuration_not_every_pod() -> None:
    with pytest.raises(ConfigError, match="must not contain '.': executor hostnames") as err:
        KubernetesConf.from_spark_conf({"spark.kubernetes.executor.podNamePrefix": "a.b"})
    assert err.value.key == "spark.kubernetes.executor.podNamePrefix"


def test_substitute_ids() -> None:
    assert substitute_ids("{{APP_ID}}/{{EXECUTOR_ID}}/{{APP_ID}}", "app", 3) == "app/3/app"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", []),
        ("  -Da=1   -Db=2 ", ["-Da=1", "-Db=2"]),
        ("-Dx='a b' -Dy=\"c d\"", ["-Dx=a b", "-Dy=c d"]),
        ("'it''s'", ["its"]),
        ('"a\\"b" c\\d', ['a"b', "c\\d"]),
        ("''", [""]),
        ("'a \\ b'", ["a \\ b"]),
    ],
)
def test_split_command_string(text: str, words: list[str]) -> None:
    assert split_command_string(text) == words


def test_split_command_string_hands_out_a_list_of_its_own_each_time() -> None:
    # The split is cached per text: a caller changing its list must not change the next caller's.
    first = split_command_string("-Da=1 -Db=2")
    first.append("-Dc=3")
    assert split_command_string("-Da=1 -Db=2") == ["-Da=1", "-Db=2"]


@pytest.mark.parametrize("text", ["'open", 'a "b'])
def test_unterminated_quote(text: str) -> None:
    for _ in range(2):  # every time, not only before a cache could hold something
        with pytest.raises(ConfigError, match="unterminated quote"):
            split_command_string(text)
