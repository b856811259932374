"""Rules that involve several keys, input forms, and unknown-key warnings."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from importlib import metadata

import pytest

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.conf.parse import parse_spark_conf
from k8s_backend.errors import ConfigError


def parse(props: dict[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(props)


class FakeSparkConf:
    """Quacks like pyspark.SparkConf for what the parser uses (getAll)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def getAll(self) -> list[tuple[str, str]]:
        return list(self._pairs)


# --- input forms -------------------------------------------------------------------------------------


def test_spark_conf_like_objects_are_read_through_get_all() -> None:
    conf = parse_spark_conf(FakeSparkConf([("spark.executor.cores", "3"), ("spark.custom", "x")]))
    assert conf.executor.default_profile.cores == 3
    assert conf.get("spark.custom") == "x"


def test_real_spark_conf_is_accepted() -> None:
    pyspark = pytest.importorskip("pyspark")
    spark_conf = pyspark.SparkConf(loadDefaults=False).set("spark.kubernetes.namespace", "jobs")
    assert KubernetesConf.from_spark_conf(spark_conf).namespace == "jobs"


def test_raw_properties_are_kept() -> None:
    props = {"spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "8"}
    conf = parse(props)
    assert dict(conf.spark_properties) == props
    assert conf.get("spark.sql.shuffle.partitions") == "8"
    assert conf.get("missing", "d") == "d"


def test_python_values_are_turned_into_spark_text() -> None:
    conf = parse({"spark.executor.instances": 4, "spark.dynamicAllocation.enabled": True})  # type: ignore[dict-item]
    assert conf.scaling.executor_instances == 4
    assert conf.scaling.dynamic_allocation is True
    assert conf.get("spark.dynamicAllocation.enabled") == "true"


def test_unusable_inputs() -> None:
    with pytest.raises(TypeError, match=r"Mapping\[str, str\] or a pyspark\.SparkConf, not list"):
        parse_spark_conf([("a", "b")])
    with pytest.raises(ConfigError, match="property names are strings"):
        parse_spark_conf({1: "x"})
    with pytest.raises(ConfigError, match=r"^spark.app.name=None is not a property value"):
        parse_spark_conf({"spark.app.name": None})


def test_with_properties_reparses_on_top() -> None:
    conf = parse({"spark.executor.cores": "2", "spark.executor.memory": "2g"})
    again = conf.with_properties({"spark.executor.cores": "4"})
    assert again.executor.default_profile.cores == 4
    assert again.executor.default_profile.memory_mib == 2048
    with pytest.raises(ConfigError):
        conf.with_properties({"spark.executor.cores": "none"})


# --- unknown keys ------------------------------------------------------------------------------------


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        yield caplog


def test_unknown_kubernetes_key_warns_with_the_nearest_key(warnings: pytest.LogCaptureFixture) -> None:
    conf = parse({"spark.kubernetes.allocation.batchSize": "5"})
    assert conf.allocation.batch_size == 20  # ignored, not an error
    assert (
        "Unknown Spark property spark.kubernetes.allocation.batchSize is ignored by k8s_backend; "
        "did you mean spark.kubernetes.allocation.batch.size?"
    ) in warnings.messages


def test_unknown_family_member_suggests_the_family(warnings: pytest.LogCaptureFixture) -> None:
    parse({"spark.kubernetes.executor.labels.team": "a"})
    assert any("did you mean spark.kubernetes.executor.label.<name>?" in m for m in warnings.messages)


def test_unknown_key_without_close_match(warnings: pytest.LogCaptureFixture) -> None:
    parse({"spark.kubernetes.qqqqqqqqqqqqqqqqqqqqqqqq": "a"})
    assert warnings.messages == [
        "Unknown Spark property spark.kubernetes.qqqqqqqqqqqqqqqqqqqqqqqq is ignored by k8s_backend"
    ]


def test_known_and_passed_through_keys_do_not_warn(warnings: pytest.LogCaptureFixture) -> None:
    parse(
        {
            "spark.kubernetes.submission.waitAppCompletion": "false",
            "spark.kubernetes.driver.label.team": "a",
            "spark.kubernetes.driverEnv.X": "1",
            "spark.kubernetes.driver.secrets.db": "/etc/db",
            "spark.kubernetes.authenticate.submission.caCertFile": "/ca",
            "spark.kubernetes.namespace": "default",
            "spark.some.other.key": "not ours",
        }
    )
    assert warnings.messages == []


# --- fallbacks and derived values --------------------------------------------------------------------


def test_executor_image_falls_back_to_the_common_image() -> None:
    assert parse({"spark.kubernetes.container.image": "img:1"}).executor.image == "img:1"
    both = {
        "spark.kubernetes.container.image": "img:1",
        "spark.kubernetes.executor.container.image": "exec:2",
    }
    assert parse(both).executor.image == "exec:2"


def test_missing_image_is_not_a_parse_error() -> None:
    assert parse({}).executor.image is None


def test_spark_version_placeholder_in_images() -> None:
    version = metadata.version("pyspark")
    conf = parse({"spark.kubernetes.container.image": "apache/spark:{{SPARK_VERSION}}-python3"})
    assert conf.executor.image == f"apache/spark:{version}-python3"


def test_spark_version_placeholder_without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(ConfigError, match="pyspark is not installed"):
        parse({"spark.kubernetes.container.image": "spark:{{SPARK_VERSION}}"})


def test_scheduler_name_executor_key_wins() -> None:
    assert parse({"spark.kubernetes.scheduler.name": "yunikorn"}).executor.scheduler_name == "yunikorn"
    both = {
        "spark.kubernetes.scheduler.name": "yunikorn",
        "spark.kubernetes.executor.scheduler.name": "volcano",
    }
    assert parse(both).executor.scheduler_name == "volcano"


def test_executor_service_account_falls_back_to_the_drivers() -> None:
    conf = parse({"spark.kubernetes.authenticate.driver.serviceAccountName": "spark"})
    assert conf.executor.service_account == "spark"
    assert conf.driver.service_account == "spark"
    conf = parse(
        {
            "spark.kubernetes.authenticate.driver.serviceAccountName": "spark",
            "spark.kubernetes.authenticate.executor.serviceAccountName": "exec",
        }
    )
    assert (conf.executor.service_account, conf.driver.service_account) == ("exec", "spark")


def test_memory_overhead_factor_falls_back_to_the_legacy_key() -> None:
    assert parse({"spark.kubernetes.memoryOverheadFactor": "0.4"}).executor.memory_overhead_factor == 0.4
    both = {"spark.kubernetes.memoryOverheadFactor": "0.4", "spark.executor.memoryOverheadFactor": "0.2"}
    assert parse(both).executor.memory_overhead_factor == 0.2
    # Spark accepts a legacy factor of 0 (the minimum overhead still applies).
    assert parse({"spark.kubernetes.memoryOverheadFactor": "0"}).executor.memory_overhead_factor == 0.0


def test_privilege_escalation_falls_back_to_the_common_key() -> None:
    conf = parse({"spark.kubernetes.securityContext.allowPrivilegeEscalation": "true"})
    assert conf.executor.allow_privilege_escalation is True


# --- API client --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, ""),
        ({"spark.master": "pyk8s://"}, ""),
        ({"spark.master": "pyk8s://local"}, "local"),
        ({"spark.master": "pyk8s://https://10.0.0.1:6443"}, "https://10.0.0.1:6443"),
        ({"spark.master": "pyk8s://10.0.0.1:6443/"}, "https://10.0.0.1:6443"),
        ({"spark.master": "k8s://https://api.example.com"}, "https://api.example.com"),
        ({"spark.master": "k8s://http://127.0.0.1:8001"}, "http://127.0.0.1:8001"),
        ({"spark.master": "local[2]"}, ""),
        (
            {"spark.master": "local[2]", "spark.kubernetes.driver.master": "https://kubernetes.default.svc"},
            "https://kubernetes.default.svc",
        ),
        (
            {"spark.master": "pyk8s://https://a:1", "spark.kubernetes.driver.master": "k8s://https://b:2"},
            "https://b:2",
        ),
    ],
)
def test_api_master(props: dict[str, str], expected: str) -> None:
    assert parse(props).api.master == expected


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("spark.master", "pyk8s://ftp://host"),
        ("spark.master", "k8s://https://host:port"),
        ("spark.master", "pyk8s://https://"),
        ("spark.kubernetes.driver.master", "local[*]"),
    ],
)
def test_bad_api_master(name: str, raw: str) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"^{name}={raw.replace('[', '.').replace(']', '.')} is not a "
        "Kubernetes API server URL: use pyk8s://https://HOST:PORT",
    ):
        parse({name: raw})


def test_credentials_come_from_the_first_family_set(caplog: pytest.LogCaptureFixture) -> None:
    props = {
        "spark.kubernetes.authenticate.oauthToken": "client-token",
        "spark.kubernetes.authenticate.caCertFile": "/client-ca",
        "spark.kubernetes.authenticate.driver.mounted.oauthTokenFile": "/mounted/token",
        "spark.kubernetes.authenticate.driver.mounted.caCertFile": "/mounted/ca",
        "spark.kubernetes.authenticate.submission.clientCertFile": "/submit/cert",
    }
    with caplog.at_level(logging.INFO, logger="k8s_backend.conf"):
        api = parse(props).api
    assert (api.oauth_token, api.oauth_token_file, api.ca_cert_file) == ("", "/mounted/token", "/mounted/ca")
    assert api.client_cert_file == ""
    assert any("ignoring spark.kubernetes.authenticate.oauthToken" in m for m in caplog.messages)


@pytest.mark.parametrize(
    ("prefix", "field"),
    [
        ("spark.kubernetes.authenticate.", "client_key_file"),
        ("spark.kubernetes.authenticate.driver.", "client_cert_file"),
        ("spark.kubernetes.authenticate.submission.", "oauth_token"),
    ],
)
def test_each_credential_family_is_read(prefix: str, field: str) -> None:
    suffix = {
        "client_key_file": "clientKeyFile",
        "client_cert_file": "clientCertFile",
        "oauth_token": "oauthToken",
    }
    api = parse({prefix + suffix[field]: "value"}).api
    assert getattr(api, field) == "value"


def test_token_and_token_file_together_are_refused() -> None:
    props = {
        "spark.kubernetes.authenticate.oauthToken": "t",
        "spark.kubernetes.authenticate.oauthTokenFile": "/t",
    }
    with pytest.raises(ConfigError, match="Cannot specify OAuth token through both a file"):
        parse(props)


# --- executor counts and failures --------------------------------------------------------------------

DA = {"spark.dynamicAllocation.enabled": "true"}


def test_static_allocation_uses_instances() -> None:
    assert parse({}).scaling.initial_target == 2
    assert parse({"spark.executor.instances": "7"}).scaling.initial_target == 7


def test_initial_executors_fall_back_to_min() -> None:
    conf = parse({**DA, "spark.dynamicAllocation.minExecutors": "3"})
    assert conf.scaling.initial_executors == 3
    assert conf.scaling.initial_target == 3


def test_initial_executors_are_the_largest_of_min_initial_and_instances() -> None:
    props = {**DA, "spark.dynamicAllocation.initialExecutors": "2", "spark.executor.instances": "4"}
    assert parse(props).scaling.initial_executors == 4
    props = {**DA, "spark.dynamicAllocation.initialExecutors": "5", "spark.executor.instances": "4"}
    assert parse(props).scaling.initial_executors == 5


def test_initial_below_min_is_ignored_with_sparks_warning(caplog: pytest.LogCaptureFixture) -> None:
    props = {
        **DA,
        "spark.dynamicAllocation.minExecutors": "3",
        "spark.dynamicAllocation.initialExecutors": "1",
        "spark.executor.instances": "1",
    }
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        assert parse(props).scaling.initial_executors == 3
    assert (
        "spark.dynamicAllocation.initialExecutors less than spark.dynamicAllocation.minExecutors is invalid, "
        "ignoring its setting, please update your configs."
    ) in caplog.messages
    assert any(m.startswith("spark.executor.instances less than") for m in caplog.messages)


def test_instances_above_max_start_above_max_as_spark(caplog: pytest.LogCaptureFixture) -> None:
    props = {**DA, "spark.dynamicAllocation.maxExecutors": "3", "spark.executor.instances": "5"}
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        assert parse(props).scaling.initial_executors == 5
    assert any("Starting with 5 executors" in m for m in caplog.messages)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"spark.dynamicAllocation.minExecutors": "-1"}, "must be positive!"),
        ({"spark.dynamicAllocation.maxExecutors": "0"}, "spark.dynamicAllocation.maxExecutors cannot be 0!"),
        (
            {"spark.dynamicAllocation.minExecutors": "5", "spark.dynamicAllocation.maxExecutors": "3"},
            r"spark.dynamicAllocation.minExecutors \(5\) must be less than or equal to "
            r"spark.dynamicAllocation.maxExecutors \(3\)!",
        ),
        (
            {"spark.dynamicAllocation.initialExecutors": "5", "spark.dynamicAllocation.maxExecutors": "3"},
            r"spark.dynamicAllocation.initialExecutors \(5\) must be less than or equal to "
            r"spark.dynamicAllocation.maxExecutors \(3\)",
        ),
    ],
)
def test_dynamic_allocation_bounds(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse({**DA, **props})


def test_dynamic_allocation_bounds_are_not_checked_when_disabled() -> None:
    conf = parse({"spark.dynamicAllocation.minExecutors": "5", "spark.dynamicAllocation.maxExecutors": "3"})
    assert conf.scaling.initial_target == 2


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, 3),  # instances unset counts as 0 for Spark's failure limit
        ({"spark.executor.instances": "1"}, 3),
        ({"spark.executor.instances": "10"}, 20),
        ({**DA, "spark.dynamicAllocation.maxExecutors": "4"}, 8),
        ({**DA}, 2**31 - 1),  # no overflow with the default maxExecutors
        ({"spark.executor.maxNumFailures": "7", "spark.executor.instances": "10"}, 7),
    ],
)
def test_max_executor_failures(props: dict[str, str], expected: int) -> None:
    conf = parse(props)
    assert conf.lifecycle.max_executor_failures == expected
    assert conf.max_executor_failures == expected


def test_pending_pods_per_profile_must_fit_the_global_cap() -> None:
    props = {
        "spark.kubernetes.allocation.maxPendingPods": "5",
        "spark.kubernetes.allocation.maxPendingPodsPerRp": "6",
    }
    with pytest.raises(
        ConfigError,
        match=r"^spark.kubernetes.allocation.maxPendingPodsPerRp=6 is invalid: Maximum "
        r"pending pods per resource profile ID \(6\) must be less than or equal to maximum pending "
        r"pods \(5",
    ):
        parse(props)
    props["spark.kubernetes.allocation.maxPendingPodsPerRp"] = "5"
    assert parse(props).allocation.max_pending_pods_per_rp == 5


def test_task_cpus_must_fit_in_executor_cores() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^spark.task.cpus=2 is invalid: The number of cores per executor "
        r"\(=1, spark.executor.cores\) has to be >= the number of cpus per task = 2.",
    ):
        parse({"spark.task.cpus": "2"})
    assert (
        parse({"spark.task.cpus": "2", "spark.executor.cores": "2"}).executor.default_profile.task_cpus == 2
    )
