"""EnvSecrets, MountSecrets, ExecutorCredentials and HadoopConf steps (ports of Spark's suites)."""

from __future__ import annotations

import attrs
import pytest
from pod_builder_fixtures import env_values, make_conf, run_step

from k8s_backend.conf.model import DriverConf
from k8s_backend.errors import ConfigError
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.steps.credentials import ExecutorCredentialsStep
from k8s_backend.pods.steps.env_secrets import EnvSecretsStep
from k8s_backend.pods.steps.hadoop_conf import HadoopConfStep
from k8s_backend.pods.steps.mount_secrets import MountSecretsStep


def test_env_secrets_sets_up_all_key_refs() -> None:
    conf = make_conf(secret_env={"MY_bar": "bar:key_bar", "MY_FOO": "foo:key_foo"})
    container = run_step(EnvSecretsStep(conf), conf).container
    assert env_values(container) == {
        "MY_bar": {"secretKeyRef": {"name": "bar", "key": "key_bar"}},
        "MY_FOO": {"secretKeyRef": {"name": "foo", "key": "key_foo"}},
    }


@pytest.mark.parametrize("ref", ["no-colon", ":key", "secret:", "a:b:c"])
def test_env_secret_must_be_secret_colon_key(ref: str) -> None:
    with pytest.raises(ConfigError, match="expected <secret name>:<key>") as err:
        EnvSecretsStep(make_conf(secret_env={"ENV": ref}))
    assert err.value.key == "spark.kubernetes.executor.secretKeyRef.ENV"


def test_mount_secrets_mounts_all_given_secrets() -> None:
    conf = make_conf(secret_mounts={"foo": "/etc/secrets/foo", "bar": "/etc/secrets/bar"})
    pod = run_step(MountSecretsStep(conf), conf)
    assert pod.pod["spec"]["volumes"] == [
        {"name": "foo-volume", "secret": {"secretName": "foo"}},
        {"name": "bar-volume", "secret": {"secretName": "bar"}},
    ]
    assert pod.container["volumeMounts"] == [
        {"name": "foo-volume", "mountPath": "/etc/secrets/foo"},
        {"name": "bar-volume", "mountPath": "/etc/secrets/bar"},
    ]


def _with_accounts(executor: str | None, driver: str | None):
    conf = make_conf(service_account=executor)
    return attrs.evolve(conf, driver=DriverConf(service_account=driver))


@pytest.mark.parametrize(
    ("executor", "driver", "expected"),
    [
        ("executor-name", None, "executor-name"),
        (None, "driver-name", "driver-name"),
        ("executor-name", "driver-name", "executor-name"),
    ],
)
def test_executor_service_account(executor: str | None, driver: str | None, expected: str) -> None:
    conf = _with_accounts(executor, driver)
    spec = run_step(ExecutorCredentialsStep(conf), conf).pod["spec"]
    assert spec == {"serviceAccount": expected, "serviceAccountName": expected}


def test_no_service_account_configured_leaves_the_pod_alone() -> None:
    conf = _with_accounts(None, None)
    assert run_step(ExecutorCredentialsStep(conf), conf).pod == {}


@pytest.mark.parametrize("field", ["serviceAccount", "serviceAccountName"])
def test_template_service_account_wins(field: str) -> None:  # SPARK-58910 for serviceAccountName
    conf = _with_accounts("executor-name", "driver-name")
    template = SparkPod({"spec": {field: "from-template"}}, {})
    assert run_step(ExecutorCredentialsStep(conf), conf, template).pod["spec"] == {field: "from-template"}


def test_hadoop_conf_map_is_mounted_when_set() -> None:
    conf = make_conf(properties={"spark.kubernetes.executor.hadoopConfigMapName": "hadoop-cm"})
    pod = run_step(HadoopConfStep(conf), conf)
    assert pod.pod["spec"]["volumes"] == [{"name": "hadoop-properties", "configMap": {"name": "hadoop-cm"}}]
    assert pod.container["volumeMounts"] == [{"name": "hadoop-properties", "mountPath": "/opt/hadoop/conf"}]
    assert env_values(pod.container) == {"HADOOP_CONF_DIR": "/opt/hadoop/conf"}
    conf = make_conf()
    assert run_step(HadoopConfStep(conf), conf) == SparkPod()
