"""Kubernetes quantities (k8s_backend.kube.quantity): the one parser, with the API server's grammar.

The cases marked "disagreed" are the ones the four former copies (conf, the fake's validation, the
process kubelet, Volcano's multiplication) read differently.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from k8s_backend.kube.quantity import (
    MAX_QUANTITY,
    cpu_millis,
    format_cpu,
    format_memory,
    is_quantity,
    memory_bytes,
    mib_quantity,
    multiply,
    parse_quantity,
)

MI = 2**20


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", Decimal(1)),
        ("0", Decimal(0)),
        ("-0", Decimal(0)),
        ("500m", Decimal("0.5")),
        ("100m", Decimal("0.1")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+1", Decimal(1)),
        ("-1", Decimal(-1)),  # the grammar takes a sign; a resource request refuses it separately
        ("1Ki", Decimal(1024)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("2Gi", Decimal(2 * 2**30)),
        ("1Ei", Decimal(2**60)),  # disagreed: the fake raised, the kubelet refused it
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("1E", Decimal(10**18)),  # disagreed: the kubelet refused it (read as an empty exponent)
        ("1e3", Decimal(1000)),  # disagreed: Volcano refused it
        ("1E3", Decimal(1000)),
        ("1e+3", Decimal(1000)),
        ("5e-1", Decimal("0.5")),
        ("1.5e3", Decimal(1500)),
        ("100n", Decimal("1e-7")),
        ("1u", Decimal("1e-6")),
        (2, Decimal(2)),  # a JSON number is read as its text
        (0.25, Decimal("0.25")),
        (0.1, Decimal("0.1")),
    ],
)
def test_quantities_parse(value: object, expected: Decimal) -> None:
    assert parse_quantity(value) == expected
    assert is_quantity(value)


@pytest.mark.parametrize(
    "value",
    [
        "",  # disagreed: the kubelet and kubernetes.utils raised, conf and the fake answered None
        " 1",  # disagreed: the kubelet and kubernetes.utils accepted it; the API server refuses blanks
        "1 ",
        "1\n",  # disagreed: the fake and Volcano accepted it (``$`` matches before a final newline)
        "1 Gi",
        "1Qi",  # disagreed: Volcano multiplied it to "2Qi"
        "1K",  # kubernetes.utils reads it as 1000; the API server knows only k
        "1ki",
        "1gi",
        "1KiB",
        "1GB",
        "1e",
        "1e3k",
        "1e3Ki",
        "1.2.3",
        ".",
        "Gi",
        "abc",
        "1x",
        "NaN",
        "Infinity",
        "1_000",
        "٣",  # a digit to str.isdigit(), not to the API server
        "1e9999999999999999999",  # an exponent beyond any int64
        True,
        None,
        [1],
        float("nan"),
        float("inf"),
    ],
)
def test_bad_quantities_are_refused(value: object) -> None:
    assert not is_quantity(value)
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        parse_quantity(value)


def test_the_error_names_the_field_the_value_and_the_accepted_form() -> None:
    with pytest.raises(ValueError) as caught:
        parse_quantity(" 1", field="node n cpu")
    message = str(caught.value)
    assert message.startswith("node n cpu: ' 1' is not a Kubernetes quantity: use a number")
    assert "Ki Mi Gi Ti Pi Ei" in message
    assert "no blanks" in message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e30", MAX_QUANTITY),  # the API server caps at 2^63-1 instead of refusing
        ("-1e30", -MAX_QUANTITY),
        ("9Ei", MAX_QUANTITY),
        ("1e999999999", MAX_QUANTITY),  # disagreed: conf and the kubelet crashed, the fake hung
        ("99999999999999999999999999999999999999", MAX_QUANTITY),
        ("9223372036854775807", MAX_QUANTITY),
        ("9223372036854775806", MAX_QUANTITY - 1),
        ("0.1n", Decimal("1e-9")),  # rounded up to a whole nano: asking for some gets some
        ("1e-999999999", Decimal("1e-9")),
        ("-0.1n", Decimal("-1e-9")),
        ("1.0000000001", Decimal("1.000000001")),
    ],
)
def test_values_are_rounded_and_capped_as_the_api_server_does(value: str, expected: Decimal) -> None:
    assert parse_quantity(value) == expected


def test_long_numbers_are_exact() -> None:
    assert parse_quantity("1234567890.123456789Ki") == Decimal("1234567890.123456789") * 1024
    assert parse_quantity("0.000000000000000000000000000000000001") == Decimal("1e-9")


@pytest.mark.parametrize(
    ("value", "millis"),
    [("1", 1000), ("500m", 500), ("0.5", 500), ("1.5", 1500), ("2e0", 2000), (3, 3000), ("0.0001", 1)],
)
def test_cpu_millis_round_up(value: object, millis: int) -> None:
    assert cpu_millis(value) == millis


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("896Mi", 896 * MI),
        ("1Gi", 1024 * MI),
        ("1G", 10**9),
        ("128974848", 128974848),
        ("1e3", 1000),
        ("1k", 1000),
        ("0.5", 1),
        ("1E", 10**18),
    ],
)
def test_memory_bytes_round_up(value: object, size: int) -> None:
    assert memory_bytes(value) == size


def test_conversions_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"^container c cpu request: 'lots' is not"):
        cpu_millis("lots", field="container c cpu request")
    with pytest.raises(ValueError, match=r"^memory: '1gb' is not"):
        memory_bytes("1gb")


@pytest.mark.parametrize(
    ("num_bytes", "text"),
    [(896 * MI, "896Mi"), (1024 * MI, "1Gi"), (1536, "1536"), (2048, "2Ki"), (2**60, "1Ei"), (0, "0")],
)
def test_format_memory(num_bytes: int, text: str) -> None:
    assert format_memory(num_bytes) == text
    assert memory_bytes(text) == num_bytes


@pytest.mark.parametrize(("millis", "text"), [(1500, "1500m"), (2000, "2"), (500, "500m"), (0, "0")])
def test_format_cpu(millis: int, text: str) -> None:
    assert format_cpu(millis) == text
    assert cpu_millis(text) == millis


def test_mib_quantity() -> None:
    assert mib_quantity(896) == "896Mi"
    assert mib_quantity(0) == "0Mi"
    with pytest.raises(ValueError, match="cannot be negative"):
        mib_quantity(-1)


@pytest.mark.parametrize(
    ("quantity", "times", "expected"),
    [
        ("896Mi", 3, "2688Mi"),
        ("500m", 3, "1500m"),
        ("1", 4, "4"),
        ("1.5", 3, "4.5"),
        ("1.5", 2, "3"),
        ("0.1", 3, "0.3"),
        ("1.50", 3, "4.5"),
        ("1e3", 2, "2e3"),
        ("1.5E-2", 2, "3E-2"),
        ("1E", 2, "2E"),
        ("+1", 2, "2"),
        ("1Gi", 0, "0Gi"),
        ("123456789012345678901234567890", 3, "370370367037037036703703703670"),
    ],
)
def test_multiply_keeps_the_suffix(quantity: str, times: int, expected: str) -> None:
    assert multiply(quantity, times) == expected
    assert parse_quantity(expected) == min(parse_quantity(quantity) * times, MAX_QUANTITY)


@pytest.mark.parametrize("quantity", ["-1", "-1Gi", "lots", "", " 1", "1Qi", "1K"])
def test_multiply_refuses_what_is_not_a_resource_amount(quantity: str) -> None:
    with pytest.raises(ValueError, match=f"^memory: {quantity!r}"):
        multiply(quantity, 2, field="memory")


def test_multiply_refuses_a_negative_count() -> None:
    with pytest.raises(ValueError, match="negative count"):
        multiply("1Gi", -1)
