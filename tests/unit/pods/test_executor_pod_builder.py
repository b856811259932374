"""ExecutorPodBuilder output for representative configurations, field by field."""

from __future__ import annotations

import pytest
from pod_builder_fixtures import (
    APP_ID,
    CONFIG_MAP,
    DRIVER_URL,
    FACTS,
    build,
    env_values,
    make_conf,
    make_request,
    spark_container,
)

from k8s_backend.conf.model import ResourceProfile, ResourceRequest, VolumeSpec
from k8s_backend.errors import ConfigError
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts, current_user_name

FIELD_POD_IP = {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}
FIELD_POD_NAME = {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}


def test_full_pod_for_a_typical_configuration() -> None:
    conf = make_conf(
        app_name="Daily ETL",
        default_profile=ResourceProfile(cores=2, memory_mib=4096),
        labels={"team": "data"},
        annotations={"cost-center": "42"},
        node_selector={"pool": "spark"},
        pull_secrets=("regcred",),
        service_account="spark-exec",
        local_dirs=("/scratch",),
        extra_java_options="-XX:+UseG1GC",
        environment={"TZ": "UTC"},
        properties={"spark.driver.port": "7078", "spark.executor.memory": "4g"},
    )
    spec = build(conf, executor_id=12, prefix="daily-etl-1a2b3c")
    assert spec.pvcs == ()
    assert spec.pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "daily-etl-1a2b3c-exec-12",
            "labels": {
                "team": "data",
                "spark-version": "4.3.0",
                "spark-app-name": "daily-etl",
                "spark-role": "executor",
                "spark-exec-id": "12",
                "spark-app-selector": APP_ID,
                "spark-exec-resourceprofile-id": "0",
            },
            "annotations": {"cost-center": "42"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "driver-pod",
                    "uid": "driver-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "hostname": "daily-etl-1a2b3c-exec-12",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {"pool": "spark"},
            "imagePullSecrets": [{"name": "regcred"}],
            "volumes": [
                {"name": "spark-conf-volume-exec", "configMap": {"name": CONFIG_MAP}},
                {"name": "spark-local-dir-1", "emptyDir": {}},
            ],
            "serviceAccount": "spark-exec",
            "serviceAccountName": "spark-exec",
            "containers": [
                {
                    "name": "spark-kubernetes-executor",
                    "image": "executor-image",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "requests": {"memory": "4505Mi", "cpu": "2"},
                        "limits": {"memory": "4505Mi"},
                    },
                    "env": [
                        {"name": "SPARK_USER", "value": "tester"},
                        {"name": "SPARK_DRIVER_URL", "value": DRIVER_URL},
                        {"name": "SPARK_EXECUTOR_CORES", "value": "2"},
                        {"name": "SPARK_EXECUTOR_MEMORY", "value": "4096m"},
                        {"name": "SPARK_APPLICATION_ID", "value": APP_ID},
                        {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"},
                        {"name": "SPARK_EXECUTOR_ID", "value": "12"},
                        {"name": "SPARK_RESOURCE_PROFILE_ID", "value": "0"},
                        {"name": "TZ", "value": "UTC"},
                        {"name": "SPARK_JAVA_OPT_0", "value": "-XX:+UseG1GC"},
                        {"name": "SPARK_JAVA_OPT_1", "value": "-Dspark.driver.port=7078"},
                        {"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": FIELD_POD_IP},
                        {"name": "SPARK_EXECUTOR_POD_NAME", "valueFrom": FIELD_POD_NAME},
                        {"name": "SPARK_LOCAL_DIRS", "value": "/scratch"},
                    ],
                    "ports": [{"name": "blockmanager", "containerPort": 7079}],
                    "args": ["executor"],
                    "securityContext": {"allowPrivilegeEscalation": False},
                    "volumeMounts": [
                        {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"},
                        {"name": "spark-local-dir-1", "mountPath": "/scratch"},
                    ],
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("memory_mib", "expected"),
    [(512, "896Mi"), (1024, "1408Mi"), (4096, "4505Mi"), (8192, "9011Mi")],
)
def test_memory_request_equals_limit(memory_mib: int, expected: str) -> None:
    conf = make_conf(default_profile=ResourceProfile(memory_mib=memory_mib))
    resources = spark_container(build(conf).pod)["resources"]
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == expected


def test_custom_gpu_profile() -> None:
    profile = ResourceProfile(
        id=1, cores=4, memory_mib=8192, custom_resources=(ResourceRequest("gpu", 1, "nvidia.com"),)
    )
    pod = build(make_conf(), profile=profile).pod
    assert spark_container(pod)["resources"] == {
        "requests": {"memory": "9011Mi", "cpu": "4"},
        "limits": {"memory": "9011Mi", "nvidia.com/gpu": "1"},
    }
    assert pod["metadata"]["labels"]["spark-exec-resourceprofile-id"] == "1"


def test_on_demand_pvc_comes_with_the_pod() -> None:
    conf = make_conf(
        volumes=(
            VolumeSpec(
                "spark-local-dir-1",
                "persistentVolumeClaim",
                "/data",
                claim_name="OnDemand",
                storage_class="standard",
                size_limit="100Gi",
            ),
        )
    )
    spec = build(conf, executor_id=3)
    assert spec.pvcs == (
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "base-exec-3-pvc-0", "labels": {"spark-app-selector": APP_ID}},
            "spec": {
                "storageClassName": "standard",
                "accessModes": ["ReadWriteOncePod"],
                "resources": {"requests": {"storage": "100Gi"}},
            },
        },
    )
    container = spark_container(spec.pod)
    # A volume named spark-local-dir-* is used as the local dir instead of an emptyDir.
    assert env_values(container)["SPARK_LOCAL_DIRS"] == "/data"
    assert [v["name"] for v in spec.pod["spec"]["volumes"]] == ["spark-conf-volume-exec", "spark-local-dir-1"]
    assert spec.pod["spec"]["volumes"][1]["persistentVolumeClaim"] == {
        "claimName": "base-exec-3-pvc-0",
        "readOnly": False,
    }


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("a" * 250, "is not a valid Kubernetes object name"),
        ("spark_exec", "is not a valid Kubernetes object name"),
        ("my.app", "is not a DNS-1123 label"),
    ],
)
def test_invalid_pod_names_are_config_errors(prefix: str, problem: str) -> None:
    builder = ExecutorPodBuilder(make_conf(), facts=FACTS)
    with pytest.raises(ConfigError, match=problem) as err:
        builder.build(make_request(builder.conf, prefix=prefix))
    assert err.value.key == "spark.kubernetes.executor.podNamePrefix"


def test_builder_checks_the_configuration_once_when_made() -> None:
    with pytest.raises(ConfigError, match="Must specify the executor container image"):
        ExecutorPodBuilder(make_conf(image=None), facts=FACTS)


def test_driver_facts_default_to_this_process(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SPARK_USER", "from-env")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    builder = ExecutorPodBuilder(make_conf())
    assert builder.facts == DriverFacts(spark_user="from-env", spark_version="4.3.0", conf_dir=str(tmp_path))
    env = env_values(spark_container(builder.build(make_request(builder.conf)).pod))
    assert env["SPARK_USER"] == "from-env"


def test_current_user_falls_back_to_the_os_user() -> None:
    assert current_user_name({"SPARK_USER": "alice"}) == "alice"
    assert current_user_name({}) != ""


def test_detect_keeps_the_given_auth_secret() -> None:
    facts = DriverFacts.detect(make_conf(), auth_secret="zz-secret-zz")
    assert facts.auth_secret == "zz-secret-zz"
    assert "zz-secret-zz" not in repr(facts)  # secrets stay out of logs
