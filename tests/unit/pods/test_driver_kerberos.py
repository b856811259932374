"""Kerberos on the driver (Spark's KerberosConfDriverFeatureStep): the step alone, then cluster mode."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.errors import ConfigError
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import SECRETS, Obj
from k8s_backend.pods.driver import DriverContext, DriverPodBuilder
from k8s_backend.pods.driver.kerberos import DriverKerberosStep
from k8s_backend.pods.step import SparkPod

APP_ID = "spark-" + "b" * 32
K = "spark.kubernetes.kerberos."


def ctx(props: dict[str, str]) -> DriverContext:
    return DriverContext(properties=props, app_id=APP_ID, pod_name="app-driver", namespace="team")


def base() -> SparkPod:
    return SparkPod({"spec": {}}, {"name": "spark-kubernetes-driver"})


def test_without_kerberos_keys_the_pod_is_unchanged_and_nothing_is_owned() -> None:
    step = DriverKerberosStep({})
    assert step.configure_pod(base(), ctx({})) == base()
    assert step.owned_resources(ctx({})) == []
    assert step.system_properties(ctx({})) == {}


def test_a_named_krb5_config_map_is_mounted_at_etc_krb5_conf() -> None:
    props = {f"{K}krb5.configMapName": "site-krb5"}
    pod = DriverKerberosStep(props).configure_pod(base(), ctx(props))
    assert pod.pod["spec"]["volumes"] == [{"name": "krb5-file", "configMap": {"name": "site-krb5"}}]
    assert pod.container["volumeMounts"] == [
        {"name": "krb5-file", "mountPath": "/etc/krb5.conf", "subPath": "krb5.conf"}
    ]
    assert DriverKerberosStep(props).owned_resources(ctx(props)) == []


def test_a_local_krb5_conf_ships_in_an_owned_config_map_as_its_krb5_conf_item(tmp_path: Path) -> None:
    krb5 = tmp_path / "site-krb5.conf"
    krb5.write_text("[libdefaults]\n default_realm = EXAMPLE.COM\n")
    props = {f"{K}krb5.path": str(krb5)}
    step = DriverKerberosStep(props)
    pod = step.configure_pod(base(), ctx(props))
    assert pod.pod["spec"]["volumes"] == [
        {
            "name": "krb5-file",
            "configMap": {"name": "app-krb5-file", "items": [{"key": "site-krb5.conf", "path": "krb5.conf"}]},
        }
    ]
    [config_map] = step.owned_resources(ctx(props))
    assert config_map["kind"] == "ConfigMap" and config_map["immutable"] is True
    assert config_map["metadata"] == {
        "name": "app-krb5-file",
        "namespace": "team",
        "labels": {"spark-app-selector": APP_ID},
    }
    assert config_map["data"] == {"site-krb5.conf": krb5.read_text()}


def test_a_token_secret_is_mounted_and_named_by_hadoop_token_file_location() -> None:
    props = {f"{K}tokenSecret.name": "dt", f"{K}tokenSecret.itemKey": "tokens"}
    pod = DriverKerberosStep(props).configure_pod(base(), ctx(props))
    assert pod.pod["spec"]["volumes"] == [{"name": "hadoop-secret", "secret": {"secretName": "dt"}}]
    assert pod.container["volumeMounts"] == [
        {"name": "hadoop-secret", "mountPath": "/mnt/secrets/hadoop-credentials"}
    ]
    assert pod.container["env"] == [
        {"name": "HADOOP_TOKEN_FILE_LOCATION", "value": "/mnt/secrets/hadoop-credentials/tokens"}
    ]


def test_a_local_keytab_ships_in_a_secret_and_the_key_is_rewritten_to_its_path_in_the_pod(
    tmp_path: Path,
) -> None:
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02binary")
    props = {
        "spark.kerberos.keytab": str(keytab),
        "spark.kerberos.principal": "alice@EXAMPLE.COM",
        f"{K}tokenSecret.name": "dt",  # a keytab wins over a token Secret, as in Spark
        f"{K}tokenSecret.itemKey": "tokens",
    }
    step = DriverKerberosStep(props)
    assert step.system_properties(ctx(props)) == {
        "spark.kerberos.keytab": "/mnt/secrets/kerberos-keytab/alice.keytab"
    }
    [secret] = step.owned_resources(ctx(props))
    assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", "app-kerberos-keytab")
    assert base64.b64decode(secret["data"]["alice.keytab"]) == b"\x05\x02binary"
    pod = step.configure_pod(base(), ctx(props))
    assert pod.pod["spec"]["volumes"] == [
        {"name": "kerberos-keytab", "secret": {"secretName": "app-kerberos-keytab"}}
    ]
    assert pod.container["volumeMounts"] == [
        {"name": "kerberos-keytab", "mountPath": "/mnt/secrets/kerberos-keytab"}
    ]
    assert "env" not in pod.container


def test_a_keytab_in_the_image_is_neither_shipped_nor_mounted() -> None:
    props = {"spark.kerberos.keytab": "local:///opt/k.keytab", "spark.yarn.principal": "alice@EXAMPLE.COM"}
    step = DriverKerberosStep(props)
    assert step.configure_pod(base(), ctx(props)) == base()
    assert step.owned_resources(ctx(props)) == []
    assert step.system_properties(ctx(props)) == {}


@pytest.mark.parametrize(
    ("props", "key", "match"),
    [
        ({f"{K}krb5.path": "/k", f"{K}krb5.configMapName": "m"}, f"{K}krb5.path", "both set"),
        ({"spark.kerberos.keytab": "/k"}, "spark.kerberos.principal", "without spark.kerberos.principal"),
        ({"spark.kerberos.principal": "a@B"}, "spark.kerberos.keytab", "without spark.kerberos.keytab"),
        ({f"{K}tokenSecret.name": "dt"}, f"{K}tokenSecret.itemKey", "without .*itemKey"),
        ({f"{K}tokenSecret.itemKey": "t"}, f"{K}tokenSecret.name", "without .*tokenSecret.name"),
    ],
)
def test_bad_combinations_are_config_errors_naming_the_key(
    props: dict[str, str], key: str, match: str
) -> None:
    with pytest.raises(ConfigError, match=match) as error:
        DriverKerberosStep(props)
    assert error.value.key == key


def test_missing_files_are_config_errors_naming_the_key(tmp_path: Path) -> None:
    props = {f"{K}krb5.path": str(tmp_path / "none.conf")}
    with pytest.raises(ConfigError, match=r"krb5\.path=.*no such file") as error:
        DriverKerberosStep(props).owned_resources(ctx(props))
    assert error.value.key == f"{K}krb5.path"
    props = {"spark.kerberos.keytab": str(tmp_path / "none.keytab"), "spark.kerberos.principal": "a@B"}
    with pytest.raises(ConfigError, match=r"keytab=.*no such file") as error:
        DriverKerberosStep(props).system_properties(ctx(props))
    assert error.value.key == "spark.kerberos.keytab"


def test_the_step_is_in_the_builder_and_excluded_by_spark_s_class_name() -> None:
    names = [type(s).__name__ for s in DriverPodBuilder({}).steps]
    assert names.index("DriverKerberosStep") == names.index("DriverHadoopConfStep") + 1
    excluded = DriverPodBuilder(
        {
            "spark.kubernetes.driver.pod.excludedFeatureSteps": (
                "org.apache.spark.deploy.k8s.features.KerberosConfDriverFeatureStep"
            )
        }
    )
    assert "DriverKerberosStep" not in [type(s).__name__ for s in excluded.steps]


# Through cluster mode's plan.


def plan(tmp_path: Path, *confs: str) -> ClusterPlan:
    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster", "--name", "krb"]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=team", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ={})


def _owned(p: ClusterPlan, kind: str) -> list[Obj]:
    return [body for body in p.owned if body["kind"] == kind]


def test_cluster_mode_ships_the_keytab_and_the_driver_reads_its_path_in_the_pod(tmp_path: Path) -> None:
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"kt")
    krb5 = tmp_path / "krb5.conf"
    krb5.write_text("[libdefaults]\n")
    p = plan(
        tmp_path,
        f"spark.kerberos.keytab={keytab}",
        "spark.kerberos.principal=alice@EXAMPLE.COM",
        f"{K}krb5.path={krb5}",
    )
    assert p.properties["spark.kerberos.keytab"] == "/mnt/secrets/kerberos-keytab/alice.keytab"
    assert "spark.kerberos.keytab=/mnt/secrets/kerberos-keytab/alice.keytab" in "\n".join(p.data.values())
    [secret] = _owned(p, "Secret")
    assert secret["metadata"]["name"] == f"{p.names.pod.removesuffix('-driver')}-kerberos-keytab"
    [config_map] = _owned(p, "ConfigMap")
    mounts = {m["mountPath"] for m in p.pod["spec"]["containers"][0]["volumeMounts"]}
    assert {"/etc/krb5.conf", "/mnt/secrets/kerberos-keytab"} <= mounts
    created = {**p.pod, "metadata": {**p.pod["metadata"], "uid": "u-1"}}
    owned = {body["kind"]: (resource, body) for resource, body in p.owned_objects(created)}
    assert owned["Secret"][0] == SECRETS
    assert owned["Secret"][1]["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    volumes = p.pod["spec"]["volumes"]
    assert config_map["metadata"]["name"] in {v["configMap"]["name"] for v in volumes if "configMap" in v}
    assert ("create", "secrets") in {(n.verb, n.resource.plural) for n in p.needs}


def test_cluster_mode_turns_a_bad_kerberos_setting_into_a_usage_error_before_anything_exists(
    tmp_path: Path,
) -> None:
    with pytest.raises(UsageError, match=r"spark\.kubernetes\.kerberos\.krb5\.path=.*no such file"):
        plan(tmp_path, f"{K}krb5.path={tmp_path / 'missing.conf'}")
    with pytest.raises(UsageError, match=r"without spark\.kerberos\.principal"):
        plan(tmp_path, f"spark.kerberos.keytab={tmp_path}")


def test_the_kerberos_keys_are_accepted_by_the_conf_and_spark_2_4_s_internal_ones_refused() -> None:
    from k8s_backend.conf.model import KubernetesConf

    KubernetesConf.from_spark_conf(
        {
            f"{K}krb5.configMapName": "m",
            f"{K}tokenSecret.name": "dt",
            f"{K}tokenSecret.itemKey": "t",
            "spark.kerberos.keytab": "local:///k",
            "spark.kerberos.principal": "a@B",
            "spark.kubernetes.driver.annotateExitException": "true",
        }
    )
    with pytest.raises(ConfigError, match="Spark 2.4") as error:
        KubernetesConf.from_spark_conf({f"{K}dt-secret-name": "x"})
    assert error.value.key == f"{K}dt-secret-name"


def test_krb5_conf_without_keytab_or_token_secret_warns_once_that_no_tokens_are_obtained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    props = {"spark.kubernetes.kerberos.krb5.configMapName": "krb5-no-tokens"}
    with caplog.at_level("WARNING", logger="k8s_backend.pods.driver.kerberos"):
        DriverKerberosStep(props)
        DriverKerberosStep(props)  # cluster mode builds the steps twice: one warning
        DriverKerberosStep({**props, "spark.kubernetes.kerberos.tokenSecret.name": "t",
                            "spark.kubernetes.kerberos.tokenSecret.itemKey": "k"})  # fmt: skip
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1, warnings
    assert "spark.kerberos.keytab" in warnings[0] and "without Hadoop delegation tokens" in warnings[0]
