"""The driver pod as ordered steps (k8s_backend.pods.driver): the basic, credentials and Service steps,
the template as the starting point, the step order, and the one table of credential files."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.driver import DriverContext, DriverPodBuilder
from k8s_backend.pods.driver.basic import DriverBasics, DriverBasicStep
from k8s_backend.pods.driver.builder import driver_steps
from k8s_backend.pods.driver.credential_files import (
    CREDENTIAL_FILES,
    DRIVER,
    LOOPBACK,
    TOKEN_KEY,
    TOKEN_MOUNT_DIR,
    credential_file,
    mount_credentials,
    point_at_mounted,
    secret_items,
    suffixes,
)
from k8s_backend.pods.driver.credentials import DriverCredentialsStep, DriverSecret
from k8s_backend.pods.driver.hadoop import DriverHadoopConfStep
from k8s_backend.pods.driver.kerberos import DriverKerberosStep
from k8s_backend.pods.driver.names import DriverNames
from k8s_backend.pods.driver.network_policy import DriverNetworkPolicyStep
from k8s_backend.pods.driver.service import DriverServiceStep, owned_by
from k8s_backend.pods.driver.sizing import driver_ports, driver_resources
from k8s_backend.pods.driver.steps import DriverLocalDirsStep, DriverMountSecretsStep
from k8s_backend.pods.step import SparkPod

NAMES = DriverNames(
    app_id="spark-" + "a" * 32, pod="app-driver", service="app-driver-svc", config_map="cm", namespace="team"
)
BASICS = DriverBasics(
    names=NAMES,
    app_name="App",
    image="spark:py",
    args=("k8s-backend", "submit"),
    conf_items=({"key": "spark.properties", "path": "spark.properties"},),
)
PROPS = {"spark.local.dir": "/tmp/l", "spark.kubernetes.driverEnv.SPARK_USER": "alice"}


def ctx(props: dict[str, str] = PROPS) -> DriverContext:
    return DriverContext(properties=props, app_id=NAMES.app_id, pod_name=NAMES.pod, namespace=NAMES.namespace)


def test_the_builder_runs_spark_s_driver_steps_in_spark_s_order() -> None:
    steps = DriverPodBuilder(PROPS, basics=BASICS).steps
    assert [type(s).__name__ for s in steps] == [
        "DriverBasicStep",
        "DriverCredentialsStep",
        "DriverServiceStep",
        "DriverMountSecretsStep",
        "DriverEnvSecretsStep",
        "DriverVolumesStep",
        "DriverHadoopConfStep",
        "DriverKerberosStep",
        "DriverLocalDirsStep",
        "DriverNetworkPolicyStep",
    ]
    assert [type(s) for s in driver_steps(PROPS)][-4:] == [
        DriverHadoopConfStep,
        DriverKerberosStep,
        DriverLocalDirsStep,
        DriverNetworkPolicyStep,
    ]
    # Without the basics (the steps on their own, as the feature-step tests use them) there are none.
    assert type(DriverPodBuilder(PROPS).steps[0]) is DriverMountSecretsStep


def test_the_basic_steps_cannot_be_excluded_but_the_others_can(caplog: pytest.LogCaptureFixture) -> None:
    props = {
        **PROPS,
        "spark.kubernetes.driver.pod.excludedFeatureSteps": (
            "k8s_backend.pods.driver.basic.DriverBasicStep,"
            "org.apache.spark.deploy.k8s.features.LocalDirsFeatureStep"
        ),
    }
    with caplog.at_level(logging.WARNING):
        names = [type(s).__name__ for s in DriverPodBuilder(props, basics=BASICS).steps]
    assert names[0] == "DriverBasicStep"
    assert "DriverLocalDirsStep" not in names


def test_build_pod_starts_from_the_template_and_puts_the_spark_container_back(tmp_path: Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text(
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: side, image: busybox}\n"
        "  - {name: main, image: x}\n  - {name: tail, image: busybox}\n"
    )
    props = {
        **PROPS,
        "spark.kubernetes.driver.podTemplateFile": str(template),
        "spark.kubernetes.driver.podTemplateContainerName": "main",
    }
    built = DriverPodBuilder(props, basics=BASICS).build_pod(ctx(props))
    assert [c["name"] for c in built.pod["spec"]["containers"]] == ["side", "main", "tail"]
    assert built.pod["spec"]["containers"][1]["image"] == "spark:py"
    assert built.service["metadata"]["name"] == "app-driver-svc"
    assert "ownerReferences" not in built.service["metadata"]  # the pod does not exist yet
    owned = owned_by(built.service, {"metadata": {"name": "app-driver", "uid": "u-1"}})
    assert owned["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_build_pod_needs_the_basics() -> None:
    with pytest.raises(TypeError, match="basics"):
        DriverPodBuilder(PROPS).build_pod(ctx())


def test_a_template_that_cannot_be_read_is_a_config_error_naming_the_key() -> None:
    props = {**PROPS, "spark.kubernetes.driver.podTemplateFile": "/no/such/template.yaml"}
    with pytest.raises(ConfigError) as caught:
        DriverPodBuilder(props, basics=BASICS).build_pod(ctx(props))
    assert caught.value.key == "spark.kubernetes.driver.podTemplateFile"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.kubernetes.driver.label.spark-role", "x"),
        ("spark.kubernetes.driverEnv.1BAD", "x"),
        ("spark.driver.memory", "lots"),
        ("spark.driver.cores", "0"),
        ("spark.driver.port", "70000"),
        ("spark.kubernetes.driver.securityContext.allowPrivilegeEscalation", "maybe"),
        ("spark.kubernetes.driver.service.ipFamilyPolicy", "Triple"),
    ],
)
def test_a_bad_basic_or_service_key_is_refused_when_the_builder_is_made(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DriverPodBuilder({**PROPS, key: value}, basics=BASICS)
    assert caught.value.key == key
    assert key in str(caught.value)


def test_the_sizing_rules_are_config_errors_naming_the_key() -> None:
    assert driver_resources({"spark.driver.memory": "2g"}).memory == "2867Mi"
    assert driver_ports({"spark.ui.port": "0"}).ui == 4040
    with pytest.raises(ConfigError) as caught:
        driver_resources({"spark.driver.memoryOverheadFactor": "-1"})
    assert caught.value.key == "spark.driver.memoryOverheadFactor"


def test_the_basic_step_does_not_change_its_input() -> None:
    before = SparkPod({"metadata": {"labels": {"a": "b"}}}, {"name": "main"})
    after = DriverBasicStep(PROPS, BASICS).configure_pod(before, ctx())
    assert before == SparkPod({"metadata": {"labels": {"a": "b"}}}, {"name": "main"})
    assert after.pod["metadata"]["labels"]["a"] == "b"
    assert after.container["name"] == "main"
    assert [v["name"] for v in after.pod["spec"]["volumes"]] == [
        "spark-conf-volume-driver"
    ]  # nothing shipped


def test_the_credentials_step_mounts_the_secret_items_and_the_secret_properties() -> None:
    secret = DriverSecret(mounted_from="s", items=(TOKEN_KEY, "driver-ca.crt"), secret_conf_from="s")
    pod = DriverCredentialsStep(secret).configure_pod(SparkPod({}, {}), ctx())
    env = {e["name"]: e.get("value") or e.get("valueFrom") for e in pod.container["env"]}
    assert env == {
        "K8S_BACKEND_API_TOKEN_FILE": f"{TOKEN_MOUNT_DIR}/token",
        "K8S_BACKEND_DRIVER_CA_FILE": f"{TOKEN_MOUNT_DIR}/driver-ca.crt",
        "K8S_BACKEND_SECRET_CONF": {"secretKeyRef": {"name": "s", "key": "spark-secret.properties"}},
    }
    assert pod.container["volumeMounts"] == [
        {"name": "k8s-backend-api-token", "mountPath": TOKEN_MOUNT_DIR, "readOnly": True}
    ]
    (volume,) = pod.pod["spec"]["volumes"]
    assert volume["secret"] == {
        "secretName": "s",
        "items": [{"key": "token", "path": "token"}, {"key": "driver-ca.crt", "path": "driver-ca.crt"}],
    }
    untouched = SparkPod({}, {})
    assert DriverCredentialsStep(DriverSecret()).configure_pod(untouched, ctx()) == untouched


def test_one_table_names_every_credential_file_once() -> None:
    items = [f.item for f in CREDENTIAL_FILES]
    variables = [f.env for f in CREDENTIAL_FILES]
    assert len(set(items)) == len(items) and len(set(variables)) == len(variables)
    assert suffixes(LOOPBACK) == ("caCertFile", "clientCertFile", "clientKeyFile")
    assert suffixes(DRIVER) == ("oauthTokenFile", "caCertFile", "clientCertFile", "clientKeyFile")
    assert credential_file(DRIVER, "caCertFile").path == f"{TOKEN_MOUNT_DIR}/driver-ca.crt"
    assert secret_items(LOOPBACK, {"clientKeyFile": b"K"}) == {"client.key": b"K"}


def test_point_at_mounted_is_the_one_place_properties_name_the_mounted_files() -> None:
    family = "spark.kubernetes.authenticate.driver.mounted."
    props: dict[str, str] = {}
    variables = point_at_mounted(props, family, DRIVER, ["caCertFile", "clientKeyFile"])
    assert props == {
        family + "caCertFile": f"{TOKEN_MOUNT_DIR}/driver-ca.crt",
        family + "clientKeyFile": f"{TOKEN_MOUNT_DIR}/driver-client.key",
    }
    assert variables == {
        family + "caCertFile": "K8S_BACKEND_DRIVER_CA_FILE",
        family + "clientKeyFile": "K8S_BACKEND_DRIVER_CLIENT_KEY_FILE",
    }
    mounted = mount_credentials(SparkPod({}, {}), "sec", ["ca.crt"])
    assert mounted.container["env"] == [
        {"name": "K8S_BACKEND_API_CA_FILE", "value": f"{TOKEN_MOUNT_DIR}/ca.crt"}
    ]


def test_the_service_step_leaves_the_pod_and_makes_the_service() -> None:
    step = DriverServiceStep(PROPS, NAMES)
    pod = SparkPod({"a": 1}, {})
    assert step.configure_pod(pod, ctx()) is pod
    (service,) = step.additional_resources(ctx())
    spec: Obj = service["spec"]
    assert (spec["clusterIP"], spec["ipFamilyPolicy"]) == ("None", "SingleStack")
