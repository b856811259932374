"""Spark-style value parsing and Kubernetes quantities (k8s_backend.conf.units)."""

from __future__ import annotations

import pytest

from k8s_backend import KubernetesConf
from k8s_backend.conf import units
from k8s_backend.errors import ConfigError

KEY = "spark.some.key"


@pytest.mark.parametrize(
    ("raw", "unit", "expected"),
    [
        ("512", "m", 512),  # plain number: the key's unit
        ("512m", "m", 512),
        ("512M", "m", 512),
        ("512mb", "m", 512),
        ("4g", "m", 4096),
        ("4gb", "m", 4096),
        ("4G", "m", 4096),
        ("1t", "m", 1024 * 1024),
        ("1tb", "m", 1024 * 1024),
        ("1p", "m", 1024**3),
        ("1pb", "m", 1024**3),
        ("1024k", "m", 1),
        ("1024kb", "m", 1),
        ("1kb", "m", 0),  # truncated like Spark
        ("1048576b", "m", 1),
        ("100", "b", 100),
        ("1k", "b", 1024),
        ("1g", "b", 2**30),
        ("  2g  ", "m", 2048),
        ("-1", "m", -1),  # Spark keeps the sign; the key's check decides
        ("0", "m", 0),
    ],
)
def test_sizes_follow_spark(raw: str, unit: str, expected: int) -> None:
    assert units.parse_size(raw, key=KEY, unit=unit) == expected


def test_size_mib_is_parse_size_in_mib() -> None:
    assert units.parse_size_mib("2g", key=KEY) == 2048


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("lots", "use a whole number with a unit such as 512m or 4g (a plain number means MiB)"),
        ("", "use a whole number with a unit"),
        ("1.5g", "fractional values are not supported"),
        ("4x", "'x' is not a size unit"),
        ("4 g", "is not a size"),
        ("g", "is not a size"),
        ("99999999999999999999p", "fits in 64 bits"),
    ],
)
def test_bad_sizes_name_key_value_and_fix(raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        units.parse_size(raw, key="spark.executor.memory", unit="m")
    message = str(caught.value)
    assert message.startswith(f"spark.executor.memory={raw} is not a")
    assert fragment in message
    assert caught.value.key == "spark.executor.memory"
    assert caught.value.value == raw


def test_the_brief_example_message() -> None:
    with pytest.raises(ConfigError, match=r"^spark.executor.memory=lots is not a size: use a whole number"):
        units.parse_size_mib("lots", key="spark.executor.memory")


@pytest.mark.parametrize(
    ("raw", "unit", "expected"),
    [
        ("500", "ms", 500),
        ("500ms", "ms", 500),
        ("500MS", "ms", 500),
        ("1s", "ms", 1000),
        ("2m", "ms", 120_000),
        ("2min", "ms", 120_000),
        ("3h", "ms", 3 * 3_600_000),
        ("1d", "ms", 86_400_000),
        ("1500us", "ms", 1),
        ("30", "s", 30),
        ("1500ms", "s", 1),  # truncated like Spark's TimeUnit.convert
        ("1ms", "s", 0),
        ("-5s", "ms", -5000),
        (" 7s ", "s", 7),
    ],
)
def test_durations_follow_spark(raw: str, unit: str, expected: int) -> None:
    assert units.parse_duration(raw, key=KEY, unit=unit) == expected


def test_seconds_are_floats_counted_in_the_key_unit_first() -> None:
    assert units.parse_seconds("1500", key=KEY, unit="ms") == 1.5
    assert units.parse_seconds("1500ms", key=KEY, unit="s") == 1.0
    assert units.parse_seconds("2min", key=KEY, unit="s") == 120.0


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("soon", "use a whole number with a unit such as 500ms, 30s, 2min, 3h or 1d"),
        ("1.5s", "is not a duration"),
        ("5w", "'w' is not a time unit"),
        ("", "is not a duration"),
    ],
)
def test_bad_durations(raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        units.parse_duration(raw, key="spark.kubernetes.allocation.batch.delay")
    assert str(caught.value).startswith(f"spark.kubernetes.allocation.batch.delay={raw} is not a duration")
    assert fragment in str(caught.value)


def test_plain_number_unit_is_named_in_duration_errors() -> None:
    with pytest.raises(ConfigError, match=r"a plain number means seconds"):
        units.parse_duration("x", key=KEY, unit="s")


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("TRUE", True), ("False", False), (" true ", True)]
)
def test_booleans(raw: str, expected: bool) -> None:
    assert units.parse_bool(raw, key=KEY) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "0", "on", "", "t"])
def test_bad_booleans(raw: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{KEY}={raw} is not a boolean: use true or false$"):
        units.parse_bool(raw, key=KEY)


@pytest.mark.parametrize(("raw", "expected"), [("5", 5), (" -3 ", -3), ("+4", 4), ("2147483647", 2**31 - 1)])
def test_ints(raw: str, expected: int) -> None:
    assert units.parse_int(raw, key=KEY) == expected


@pytest.mark.parametrize("raw", ["1.5", "1_000", "x", "", "2147483648", "1e3"])
def test_bad_ints(raw: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{KEY}={raw} is not"):
        units.parse_int(raw, key=KEY)


def test_longs_take_64_bits() -> None:
    assert units.parse_int("2147483648", key=KEY, bits=64) == 2**31


@pytest.mark.parametrize(
    ("raw", "expected"), [("0.1", 0.1), ("1", 1.0), ("1e-3", 0.001), (".5", 0.5), ("2.", 2.0)]
)
def test_floats(raw: str, expected: float) -> None:
    assert units.parse_float(raw, key=KEY) == expected


@pytest.mark.parametrize("raw", ["nan", "inf", "1_0", "x", "", "0x10"])
def test_bad_floats(raw: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"^{KEY}={raw} is not a number: use a decimal number such as 0.1$"
    ):
        units.parse_float(raw, key=KEY)


@pytest.mark.parametrize("raw", ["1e400", "-1e309"])
def test_floats_a_double_cannot_hold_are_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{KEY}={raw} is not a finite number"):
        units.parse_float(raw, key=KEY)


def test_an_overflowing_overhead_factor_is_a_config_error_naming_its_key() -> None:
    key = "spark.executor.memoryOverheadFactor"
    with pytest.raises(ConfigError, match="is not a finite number") as caught:
        KubernetesConf.from_spark_conf({key: "1e400"})
    assert caught.value.key == key


def test_lists_trim_and_drop_empty_items() -> None:
    assert units.parse_list(" a, b,,c ,") == ("a", "b", "c")
    assert units.parse_list("") == ()


def test_mib_quantity() -> None:
    assert units.mib_quantity(896) == "896Mi"
    assert units.mib_quantity(0) == "0Mi"
    with pytest.raises(ValueError, match="cannot be negative"):
        units.mib_quantity(-1)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", "1"),
        ("2", "2"),
        ("0.5", "500m"),
        ("0.1", "100m"),
        ("500m", "500m"),
        ("2000m", "2"),
        ("1.5", "1500m"),
        (" 250m ", "250m"),
        ("1e3", "1000"),
        ("1k", "1000"),
        ("0.001", "1m"),
    ],
)
def test_cpu_quantities_are_normalised(raw: str, expected: str) -> None:
    assert units.parse_cpu_quantity(raw, key=KEY) == expected


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("lots", "is not a Kubernetes CPU quantity: use a positive number of cores such as 1, 0.5 or 500m"),
        ("1 core", "is not a Kubernetes CPU quantity"),
        ("0", "must be positive"),
        ("-1", "must be positive"),
        ("0.0005", "whole millicores"),
        ("100u", "whole millicores"),
        ("1K", "is not a Kubernetes CPU quantity"),
        ("1 m", "is not a Kubernetes CPU quantity"),
    ],
)
def test_bad_cpu_quantities(raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        units.parse_cpu_quantity(raw, key="spark.kubernetes.executor.request.cores")
    assert str(caught.value).startswith(f"spark.kubernetes.executor.request.cores={raw} is")
    assert fragment in str(caught.value)


def test_cpu_millis() -> None:
    assert units.cpu_millis("500m") == 500
    assert units.cpu_millis("2") == 2000
    with pytest.raises(ValueError):
        units.cpu_millis("x")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1Ki", 1024),
        ("1.5Gi", 1.5 * 2**30),
        ("2M", 2e6),
        ("1e3", 1000),
        ("1E", 1e18),
        ("100m", 0.1),
        ("7", 7),
        ("-1", -1),
        ("1Ei", 2**60),
        # Used to raise decimal.InvalidOperation; capped as the API server does.
        ("1e999999999", float(2**63 - 1)),
    ],
)
def test_quantity_values(text: str, value: float) -> None:
    assert float(units.quantity_value(text) or -1) == value


@pytest.mark.parametrize("text", ["", "Gi", "1 Gi", "1gi", "1e", "1.2.3", " 1", "1K", "1Qi", "1e3k", "NaN"])
def test_malformed_quantities(text: str) -> None:
    assert units.quantity_value(text) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10Gi", "10Gi"),
        ("500M", "500M"),
        ("2048", "2048"),
        ("1024", "1024"),
        ("10g", "10Gi"),
        ("10gb", "10Gi"),
        ("512m", "512Mi"),
        ("512mb", "512Mi"),
        ("100k", "100k"),
        ("100kb", "100Ki"),
        ("1t", "1Ti"),
        ("4096b", "4096"),
        ("1.5Gi", "1.5Gi"),
    ],
)
def test_volume_sizes_become_kubernetes_quantities(raw: str, expected: str) -> None:
    assert units.parse_volume_size(raw, key=KEY) == expected


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("100", "Volume size `100` is smaller than 1KiB. Missing units?"),
        ("1023", "Missing units?"),
        ("0", "Missing units?"),
        ("lots", "is not a size: use a Kubernetes quantity such as 10Gi or 500Mi"),
        ("0Gi", "must be positive"),
        ("-1Gi", "must be positive"),
    ],
)
def test_bad_volume_sizes(raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        units.parse_volume_size(raw, key=KEY)
    assert str(caught.value).startswith(f"{KEY}={raw} is")
    assert fragment in str(caught.value)
