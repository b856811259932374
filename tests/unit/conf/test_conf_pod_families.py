"""Key families shaping executor pods: labels, annotations, node selectors, env, secrets, resources."""

from __future__ import annotations

import logging

import pytest

from k8s_backend.conf.model import KubernetesConf, ResourceRequest
from k8s_backend.errors import ConfigError


def parse(props: dict[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(props)


LABEL = "spark.kubernetes.executor.label."


def test_labels_are_read() -> None:
    conf = parse({LABEL + "team": "data", LABEL + "example.com/owner": "x", LABEL + "app": "{{APP_ID}}"})
    assert dict(conf.executor.labels) == {"team": "data", "example.com/owner": "x", "app": "{{APP_ID}}"}


@pytest.mark.parametrize(
    "reserved",
    [
        "spark-app-selector",
        "spark-role",
        "spark-exec-id",
        "spark-exec-resourceprofile-id",
        "spark-app-name",
        "spark-version",
    ],
)
def test_reserved_labels_are_refused_as_spark_does(reserved: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse({LABEL + reserved: "x"})
    assert str(caught.value) == (
        f"{LABEL}{reserved}=x: Custom executor labels cannot contain {reserved} as it is reserved for Spark. "
        f"Remove {LABEL}{reserved}."
    )
    assert caught.value.key == LABEL + reserved


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("bad key", "x", "the label key 'bad key' must have a name of letters"),
        ("-team", "x", "must have a name of letters"),
        ("a" * 64, "x", "must have a name of at most 63 characters"),
        ("Bad_Prefix/x", "x", "has a prefix that must be a DNS-1123 subdomain"),
        ("/x", "x", "has an empty prefix"),
        ("example.com/", "x", "must have a name"),
        ("team", "not ok", "the label value must be letters, digits"),
        ("team", "x" * 64, "the label value must be at most 63 characters"),
        ("team", "-x", "the label value must be letters"),
    ],
)
def test_label_syntax(name: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse({LABEL + name: value})
    assert str(caught.value).startswith(f"{LABEL}{name}={value} is invalid: ")
    assert fragment in str(caught.value)


def test_label_values_are_checked_after_placeholder_substitution() -> None:
    # 30 characters + a 38-character generated application id is too long for a label value.
    with pytest.raises(
        ConfigError,
        match=r"the label value \(once \{\{APP_ID\}\} and \{\{EXECUTOR_ID\}\} are "
        r"replaced\) must be at most 63 characters",
    ):
        parse({LABEL + "app": "x" * 30 + "{{APP_ID}}"})
    # With a short known application id it fits.
    conf = parse({LABEL + "app": "x" * 30 + "{{APP_ID}}", "spark.app.id": "app-1"})
    assert conf.executor.labels["app"] == "x" * 30 + "{{APP_ID}}"
    assert parse({LABEL + "exec": "e-{{EXECUTOR_ID}}"}).executor.labels["exec"] == "e-{{EXECUTOR_ID}}"


def test_annotations_take_any_value_but_check_keys() -> None:
    prefix = "spark.kubernetes.executor.annotation."
    conf = parse({prefix + "example.com/note": "any text, {{APP_ID}}!"})
    assert dict(conf.executor.annotations) == {"example.com/note": "any text, {{APP_ID}}!"}
    with pytest.raises(ConfigError, match=rf"^{prefix}bad key=v is invalid: the annotation key 'bad key'"):
        parse({prefix + "bad key": "v"})


def test_node_selectors_merge_with_executor_ones_winning() -> None:
    conf = parse(
        {
            "spark.kubernetes.node.selector.zone": "a",
            "spark.kubernetes.node.selector.disk": "ssd",
            "spark.kubernetes.executor.node.selector.zone": "b",
        }
    )
    assert dict(conf.executor.node_selector) == {"zone": "b", "disk": "ssd"}


def test_node_selector_syntax() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^spark.kubernetes.executor.node.selector.zone=a b is invalid: the node "
        r"selector value must be letters",
    ):
        parse({"spark.kubernetes.executor.node.selector.zone": "a b"})


def test_executor_env_keeps_valid_names_and_drops_others_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    props = {
        "spark.executorEnv.GOOD_1": "a",
        "spark.executorEnv.my.var-x": "b",
        "spark.executorEnv.1BAD": "c",
        "spark.executorEnv.BAD NAME": "d",
    }
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        conf = parse(props)
    assert dict(conf.executor.environment) == {"GOOD_1": "a", "my.var-x": "b"}
    assert any(
        m.startswith(
            "Invalid key: 1BAD: a valid environment variable name must consist of alphabetic "
            "characters, digits, '_', '-', or '.', and must not start with a digit."
        )
        for m in caplog.messages
    )
    assert sum("is ignored" in m for m in caplog.messages) == 2


def test_secret_mounts() -> None:
    conf = parse({"spark.kubernetes.executor.secrets.db-creds": "/etc/db"})
    assert dict(conf.executor.secret_mounts) == {"db-creds": "/etc/db"}


@pytest.mark.parametrize(
    ("name", "path", "fragment"),
    [
        ("Bad_Secret", "/p", "the Secret name 'Bad_Secret' must be a DNS-1123 subdomain"),
        ("a.b", "/p", "(its volume name a.b-volume) must be a DNS-1123 label"),
        ("s" * 60, "/p", "must be at most 63 characters"),
        ("ok", " ", "the mount path must not be empty"),
    ],
)
def test_bad_secret_mounts(name: str, path: str, fragment: str) -> None:
    key = f"spark.kubernetes.executor.secrets.{name}"
    with pytest.raises(ConfigError) as caught:
        parse({key: path})
    assert str(caught.value).startswith(f"{key}={path} is invalid: ")
    assert fragment in str(caught.value)


def test_secret_env() -> None:
    conf = parse({"spark.kubernetes.executor.secretKeyRef.DB_PASSWORD": "db-creds:password"})
    assert dict(conf.executor.secret_env) == {"DB_PASSWORD": "db-creds:password"}


@pytest.mark.parametrize(
    ("env", "ref", "fragment"),
    [
        ("PW", "db-creds", "SecretKeyRef must be in the form name:key"),
        ("PW", "a:b:c", "SecretKeyRef must be in the form name:key"),
        ("PW", ":key", "SecretKeyRef must be in the form name:key"),
        ("PW", "name:", "SecretKeyRef must be in the form name:key"),
        ("PW", "Bad_Name:key", "the Secret name 'Bad_Name' must be a DNS-1123 subdomain"),
        ("PW", "name:bad key", "the Secret key 'bad key' must be letters, digits"),
        ("1PW", "name:key", "'1PW' is not an environment variable name"),
    ],
)
def test_bad_secret_env(env: str, ref: str, fragment: str) -> None:
    key = f"spark.kubernetes.executor.secretKeyRef.{env}"
    with pytest.raises(ConfigError) as caught:
        parse({key: ref})
    assert str(caught.value).startswith(f"{key}={ref} is invalid: ")
    assert fragment in str(caught.value)


RES = "spark.executor.resource."


def test_custom_resources() -> None:
    conf = parse(
        {
            RES + "gpu.amount": "2",
            RES + "gpu.vendor": "nvidia.com",
            RES + "gpu.discoveryScript": "/opt/gpu.sh",
            RES + "fpga.amount": "0",  # zero: not requested, as Spark
        }
    )
    assert conf.executor.default_profile.custom_resources == (
        ResourceRequest("gpu", 2, "nvidia.com", "/opt/gpu.sh"),
    )


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        (
            {RES + "gpu.vendor": "nvidia.com"},
            "You must specify an amount for gpu: set spark.executor.resource.gpu.amount",
        ),
        ({RES + "gpu.amount": "1.5"}, "spark.executor.resource.gpu.amount=1.5 is not an integer"),
        ({RES + "gpu.amount": "-1"}, "spark.executor.resource.gpu.amount=-1 is invalid: must be 0"),
        ({RES + "gpu.amount": "1"}, "spark.executor.resource.gpu.vendor is required on Kubernetes"),
        ({RES + "gpu.amount": "1", RES + "gpu.vendor": "Nvidia Corp"}, "the resource name Nvidia Corp/gpu"),
        (
            {RES + "gpu": "1"},
            "spark.executor.resource.gpu=1 is invalid: use spark.executor.resource.gpu.amount",
        ),
    ],
)
def test_bad_custom_resources(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(props)
    assert fragment in str(caught.value)


def test_unknown_resource_option_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        parse({RES + "gpu.amount": "1", RES + "gpu.vendor": "nvidia.com", RES + "gpu.vendr": "x"})
    assert "Unknown executor resource setting spark.executor.resource.gpu.vendr is ignored" in caplog.messages


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, 0),
        ({"spark.memory.offHeap.size": "1g"}, 0),  # not enabled: not counted
        ({"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "1g"}, 1024),
        ({"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "2097152"}, 2),  # plain: bytes
    ],
)
def test_offheap_memory(props: dict[str, str], expected: int) -> None:
    assert parse(props).executor.default_profile.offheap_mib == expected


@pytest.mark.parametrize("size", [None, "0", "512k"])
def test_enabled_offheap_needs_a_size(size: str | None) -> None:
    props = {"spark.memory.offHeap.enabled": "true"}
    if size is not None:
        props["spark.memory.offHeap.size"] = size
    with pytest.raises(
        ConfigError,
        match=r"spark\.memory\.offHeap\.size must be > 0 when spark\.memory\.offHeap\.enabled == true",
    ):
        parse(props)


def test_bad_offheap_flag() -> None:
    with pytest.raises(ConfigError, match=r"^spark.memory.offHeap.enabled=on is not a boolean"):
        parse({"spark.memory.offHeap.enabled": "on"})
