"""BasicExecutorStep: a port of Spark's BasicExecutorFeatureStepSuite plus the rules it covers."""

from __future__ import annotations

import pytest
from pod_builder_fixtures import (
    APP_ID,
    CONFIG_MAP,
    DRIVER_URL,
    FACTS,
    IMAGE,
    env_names,
    env_values,
    make_conf,
    run_step,
)

from k8s_backend.common.clock import ManualClock
from k8s_backend.conf.model import AllocationConf, ResourceProfile, ResourceRequest
from k8s_backend.errors import ConfigError
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.java_opts import startup_java_opts
from k8s_backend.pods.names import is_dns1123_label, resource_name_prefix
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.steps.basic import BasicExecutorStep, label_value

GPU = ResourceRequest("gpu", 2, vendor="nvidia.com")
FPGA = ResourceRequest("fpga", 1, vendor="foo.com")
POD_IP = {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}
POD_NAME = {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}


def configure(conf, *, facts=FACTS, pod=None, **request):
    return run_step(BasicExecutorStep(conf, facts), conf, pod, **request)


def default_env(**extra):
    env = {
        "SPARK_USER": "tester",
        "SPARK_DRIVER_URL": DRIVER_URL,
        "SPARK_EXECUTOR_CORES": "1",
        "SPARK_EXECUTOR_MEMORY": "1024m",
        "SPARK_APPLICATION_ID": APP_ID,
        "SPARK_CONF_DIR": "/opt/spark/conf",
        "SPARK_EXECUTOR_ID": "1",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_IP": POD_IP,
        "SPARK_EXECUTOR_POD_NAME": POD_NAME,
    }
    env.update(extra)
    return env


def test_missing_gpu_vendor_is_rejected_when_the_builder_is_made() -> None:
    conf = make_conf(default_profile=ResourceProfile(custom_resources=(ResourceRequest("gpu", 2),)))
    with pytest.raises(ConfigError, match="Resource: gpu was requested, but vendor was not specified") as err:
        BasicExecutorStep(conf, FACTS)
    assert err.value.key == "spark.executor.resource.gpu.vendor"


def test_missing_vendor_in_a_non_default_profile_fails_the_build() -> None:
    conf = make_conf()
    profile = ResourceProfile(id=3, custom_resources=(ResourceRequest("gpu", 1),))
    with pytest.raises(ConfigError, match="vendor was not specified"):
        configure(conf, profile=profile)


def test_basic_executor_pod_with_resources() -> None:
    conf = make_conf(default_profile=ResourceProfile(custom_resources=(GPU, FPGA)))
    limits = configure(conf).container["resources"]["limits"]
    assert limits == {"memory": "1408Mi", "nvidia.com/gpu": "2", "foo.com/fpga": "1"}


def test_basic_executor_pod_has_reasonable_defaults() -> None:
    conf = make_conf(labels={"label1key": "label1value"}, pull_secrets=("my-1secret-1", "my-secret-2"))
    executor = configure(conf)
    metadata = executor.pod["metadata"]
    assert metadata["name"] == "base-exec-1"
    assert metadata["labels"]["label1key"] == "label1value"
    assert executor.pod["spec"]["imagePullSecrets"] == [{"name": "my-1secret-1"}, {"name": "my-secret-2"}]
    container = executor.container
    assert container["image"] == IMAGE
    assert container["volumeMounts"] == [{"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"}]
    # 1024 MiB heap + the 384 MiB minimum overhead.
    assert container["resources"] == {
        "requests": {"memory": "1408Mi", "cpu": "1"},
        "limits": {"memory": "1408Mi"},
    }
    assert "nodeSelector" not in executor.pod["spec"]
    assert [v["name"] for v in executor.pod["spec"]["volumes"]] == ["spark-conf-volume-exec"]
    assert env_values(container) == default_env()
    assert metadata["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "driver-pod", "uid": "driver-uid", "controller": True}
    ]
    assert container["args"] == ["executor"]
    assert executor.pod["spec"]["restartPolicy"] == "Never"


def test_no_owner_reference_without_a_driver_pod() -> None:
    assert "ownerReferences" not in configure(make_conf(), driver_pod=None).pod["metadata"]


def test_executor_pod_hostnames_get_truncated_to_63_characters() -> None:
    long_name = "loremipsumdolorsitametvimatelitrefficiendisuscipianturvixlegeresple"
    prefix = resource_name_prefix(long_name, clock=ManualClock(1))
    hostname = configure(make_conf(), prefix=prefix).pod["spec"]["hostname"]
    assert len(hostname) == 63
    assert hostname.endswith("-exec-1")


def test_hostname_truncation_generates_valid_host_names() -> None:
    weird = "abcdef-*_/[]{}+==.,;'\"-----------------------------------------------"
    prefix = resource_name_prefix(weird, clock=ManualClock(1))
    hostname = configure(make_conf(), prefix=prefix).pod["spec"]["hostname"]
    assert len(hostname) <= 63
    assert is_dns1123_label(hostname)


def test_classpath_and_extra_java_options_get_translated_into_environment_variables() -> None:
    conf = make_conf(extra_java_options="foo=bar", extra_class_path="bar=baz", environment={"qux": "quux"})
    executor = configure(conf)
    assert env_values(executor.container) == default_env(
        SPARK_JAVA_OPT_0="foo=bar", SPARK_CLASSPATH="bar=baz", qux="quux"
    )


def test_executor_dirs_placeholders_are_substituted() -> None:  # SPARK-32655
    dirs = "/p1/SPARK_APPLICATION_ID/SPARK_EXECUTOR_ID,/p2/SPARK_APPLICATION_ID/SPARK_EXECUTOR_ID"
    executor = configure(make_conf(environment={"SPARK_EXECUTOR_DIRS": dirs}))
    assert env_values(executor.container)["SPARK_EXECUTOR_DIRS"] == f"/p1/{APP_ID}/1,/p2/{APP_ID}/1"


def test_executor_pyspark_memory() -> None:
    conf = make_conf(default_profile=ResourceProfile(pyspark_memory_mib=42))
    assert configure(conf).container["resources"]["requests"]["memory"] == "1450Mi"


def test_executor_offheap_memory() -> None:  # SPARK-32661
    conf = make_conf(default_profile=ResourceProfile(offheap_mib=42))
    assert configure(conf).container["resources"]["requests"]["memory"] == "1450Mi"


def test_auth_secret_propagation() -> None:
    conf = make_conf(properties={"spark.authenticate": "true"})
    facts = DriverFacts(spark_user="tester", auth_secret="s3cr3t")
    env = env_values(configure(conf, facts=facts).container)
    assert env["_SPARK_AUTH_SECRET"] == "s3cr3t"
    # The secret itself never travels as a -D option; the other auth confs do.
    assert "-Dspark.authenticate=true" in env.values()


def test_auth_secret_is_read_from_the_named_secret_and_keeps_its_place_in_the_env() -> None:
    conf = make_conf(properties={"spark.authenticate": "true"})
    facts = DriverFacts(spark_user="tester", auth_secret="s3cr3t")
    container = configure(conf, facts=facts, auth_secret_name="spark-exec-1-auth-secret").container
    assert "s3cr3t" not in str(container)
    names = [e["name"] for e in container["env"]]
    assert names[names.index("_SPARK_AUTH_SECRET") + 1] == "SPARK_JAVA_OPT_0"  # Spark's order
    [env] = [e for e in container["env"] if e["name"] == "_SPARK_AUTH_SECRET"]
    ref = {"name": "spark-exec-1-auth-secret", "key": "auth-secret"}
    assert env == {"name": "_SPARK_AUTH_SECRET", "valueFrom": {"secretKeyRef": ref}}


def test_auth_secret_falls_back_to_the_configured_secret() -> None:
    conf = make_conf(properties={"spark.authenticate": "true", "spark.authenticate.secret": "from-conf"})
    env = env_values(configure(conf).container)
    assert env["_SPARK_AUTH_SECRET"] == "from-conf"
    assert not any("from-conf" in str(v) for k, v in env.items() if k.startswith("SPARK_JAVA_OPT_"))


@pytest.mark.parametrize("key", ["spark.authenticate.secret.file", "spark.authenticate.secret.executor.file"])
def test_auth_secret_is_not_propagated_when_executors_read_it_from_a_file(key: str) -> None:
    conf = make_conf(properties={"spark.authenticate": "true", key: "/mnt/secret"})
    facts = DriverFacts(spark_user="tester", auth_secret="s3cr3t")
    assert "_SPARK_AUTH_SECRET" not in env_values(configure(conf, facts=facts).container)


def test_auth_without_any_secret_is_a_config_error() -> None:
    conf = make_conf(properties={"spark.authenticate": "true"})
    with pytest.raises(ConfigError, match=r"spark\.authenticate=true but executors would get no secret"):
        BasicExecutorStep(conf, FACTS)


def test_no_auth_secret_without_authentication() -> None:
    facts = DriverFacts(spark_user="tester", auth_secret="s3cr3t")
    assert "_SPARK_AUTH_SECRET" not in env_values(configure(make_conf(), facts=facts).container)


def test_basic_resource_profile() -> None:
    conf = make_conf(request_cores="100m", limit_cores="2")
    profile = ResourceProfile(
        id=1, cores=4, memory_mib=2048, memory_overhead_mib=1024, pyspark_memory_mib=3072
    )
    resources = configure(conf, profile=profile).container["resources"]
    # request/limit cores belong to the default profile only.
    assert resources["requests"]["cpu"] == "4"
    assert "cpu" not in resources["limits"]
    assert resources["limits"]["memory"] == "6144Mi"


def test_resource_profile_with_gpus() -> None:
    profile = ResourceProfile(id=1, cores=2, custom_resources=(GPU,))
    executor = configure(make_conf(), profile=profile)
    resources = executor.container["resources"]
    assert resources["limits"] == {"memory": "1408Mi", "nvidia.com/gpu": "2"}
    assert resources["requests"]["cpu"] == "2"
    assert executor.pod["metadata"]["labels"]["spark-exec-resourceprofile-id"] == "1"
    assert env_values(executor.container)["SPARK_RESOURCE_PROFILE_ID"] == "1"
    assert env_values(executor.container)["SPARK_EXECUTOR_CORES"] == "2"


def test_request_and_limit_cores_apply_to_the_default_profile() -> None:
    resources = configure(make_conf(request_cores="500m", limit_cores="1500m")).container["resources"]
    assert resources["requests"]["cpu"] == "500m"
    assert resources["limits"]["cpu"] == "1500m"


@pytest.mark.parametrize("profile_id", [0, 5])
def test_spark_conf_dir_is_mounted_as_a_config_map_volume(profile_id: int) -> None:
    executor = configure(make_conf(), profile=ResourceProfile(id=profile_id))
    assert {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"} in executor.container[
        "volumeMounts"
    ]
    assert {"name": "spark-conf-volume-exec", "configMap": {"name": CONFIG_MAP}} in executor.pod["spec"][
        "volumes"
    ]


@pytest.mark.parametrize("profile_id", [0, 5])
def test_config_map_volume_can_be_disabled(profile_id: int) -> None:  # SPARK-34316
    executor = configure(make_conf(), profile=ResourceProfile(id=profile_id), config_map_name=None)
    assert "volumeMounts" not in executor.container
    assert "volumes" not in executor.pod["spec"]
    # The env var stays: the entrypoint falls back to the image's own conf dir content.
    assert env_values(executor.container)["SPARK_CONF_DIR"] == "/opt/spark/conf"


def test_config_map_volume_lists_the_conf_dir_files(tmp_path) -> None:
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    (tmp_path / "spark-defaults.conf").write_text("spark.x 1\n")
    facts = DriverFacts(spark_user="tester", conf_dir=str(tmp_path))
    volume = configure(make_conf(), facts=facts).pod["spec"]["volumes"][0]
    assert volume["configMap"] == {
        "name": CONFIG_MAP,
        "items": [{"key": "log4j2.properties", "path": "log4j2.properties", "mode": 0o644}],
    }


def test_block_manager_port() -> None:  # SPARK-35482
    assert configure(make_conf()).container["ports"] == [{"name": "blockmanager", "containerPort": 7079}]
    port = configure(make_conf(block_manager_port=12345)).container["ports"]
    assert port == [{"name": "blockmanager", "containerPort": 12345}]
    with pytest.raises(ConfigError, match=r"port number must be 0 .* or in \[1024, 65535\]") as err:
        BasicExecutorStep(make_conf(block_manager_port=1000), FACTS)
    assert err.value.key == "spark.blockManager.port"
    assert "ports" not in configure(make_conf(block_manager_port=0)).container


def test_node_selector() -> None:
    executor = configure(make_conf(node_selector={"disk": "ssd", "zone": "a"}))
    assert executor.pod["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}


def test_template_ports_are_kept_next_to_the_block_manager_port() -> None:
    template = SparkPod({}, {"name": "c", "ports": [{"name": "metrics", "containerPort": 9090}]})
    ports = configure(make_conf(), pod=template).container["ports"]
    assert ports == [
        {"name": "metrics", "containerPort": 9090},
        {"name": "blockmanager", "containerPort": 7079},
    ]


def test_minimum_memory_overhead() -> None:  # SPARK-47208
    conf = make_conf(min_memory_overhead_mib=500)
    assert configure(conf).container["resources"]["limits"]["memory"] == "1524Mi"


@pytest.mark.parametrize(
    ("memory", "overhead", "factor", "expected"),
    [
        (512, None, 0.1, "896Mi"),
        (4096, None, 0.1, "4505Mi"),  # 409.6 is truncated
        (4096, None, 0.4, "5734Mi"),
        (1024, 100, 0.1, "1124Mi"),  # an explicit overhead wins over the minimum
    ],
)
def test_memory_overhead(memory: int, overhead: int | None, factor: float, expected: str) -> None:
    conf = make_conf(
        memory_overhead_factor=factor,
        default_profile=ResourceProfile(memory_mib=memory, memory_overhead_mib=overhead),
    )
    resources = configure(conf).container["resources"]
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == expected
    assert env_values(configure(conf).container)["SPARK_EXECUTOR_MEMORY"] == f"{memory}m"


def test_decommission_adds_a_pre_stop_hook() -> None:
    executor = configure(make_conf(decommission_enabled=True))
    assert executor.container["lifecycle"] == {"preStop": {"exec": {"command": ["/opt/decom.sh"]}}}
    assert "lifecycle" not in configure(make_conf()).container


def test_restart_policy_is_always_for_the_statefulset_allocator() -> None:
    conf = make_conf()
    conf = type(conf)(executor=conf.executor, allocation=AllocationConf(allocator="statefulset"))
    assert configure(conf).pod["spec"]["restartPolicy"] == "Always"


def test_labels_and_annotations_get_ids_substituted() -> None:
    conf = make_conf(
        app_name="My App!",
        labels={"owner": "x-{{APP_ID}}", "exec": "e{{EXECUTOR_ID}}"},
        annotations={"note": "{{APP_ID}}/{{EXECUTOR_ID}}"},
    )
    metadata = configure(conf, executor_id=7).pod["metadata"]
    assert metadata["labels"] == {
        "owner": f"x-{APP_ID}",
        "exec": "e7",
        "spark-version": "4.3.0",
        "spark-app-name": "my-app",  # trailing "-" stripped
        "spark-role": "executor",
        "spark-exec-id": "7",
        "spark-app-selector": APP_ID,
        "spark-exec-resourceprofile-id": "0",
    }
    assert metadata["annotations"] == {"note": f"{APP_ID}/7"}


@pytest.mark.parametrize("key", ["spark-app-selector", "spark-exec-id", "spark-role", "spark-version"])
def test_custom_labels_may_not_override_preset_labels(key: str) -> None:
    with pytest.raises(ConfigError, match=f"Custom executor labels cannot contain {key}") as err:
        BasicExecutorStep(make_conf(labels={key: "x"}), FACTS)
    assert err.value.key == f"spark.kubernetes.executor.label.{key}"


def test_spark_version_label_is_made_a_valid_label_value() -> None:
    assert label_value("4.3.0+local.build") == "4.3.0-local.build"
    assert label_value("unknown") == "unknown"


def test_scheduler_name_and_pull_policy() -> None:
    executor = configure(make_conf(scheduler_name="volcano", pull_policy="Always"))
    assert executor.pod["spec"]["schedulerName"] == "volcano"
    assert executor.container["imagePullPolicy"] == "Always"


def test_missing_image_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        BasicExecutorStep(make_conf(image=None), FACTS)
    assert str(err.value) == (
        "Must specify the executor container image "
        "(spark.kubernetes.executor.container.image or spark.kubernetes.container.image)"
    )


def test_env_order_follows_spark() -> None:
    conf = make_conf(
        extra_java_options="-Dapp={{APP_ID}} '-Dquoted=a b' -Dexec={{EXECUTOR_ID}}",
        extra_class_path="/opt/extra/*",
        environment={"FOO": "bar"},
        properties={
            "spark.authenticate": "true",
            "spark.authenticate.secret": "s",
            "spark.driver.port": "7078",
            "spark.ui.custom.executor.log.url": "http://logs/{{APP_ID}}",
            "spark.executor.memory": "1g",
        },
    )
    container = configure(conf, executor_id=3).container
    assert env_names(container) == [
        "SPARK_USER",
        "SPARK_DRIVER_URL",
        "SPARK_EXECUTOR_CORES",
        "SPARK_EXECUTOR_MEMORY",
        "SPARK_APPLICATION_ID",
        "SPARK_CONF_DIR",
        "SPARK_EXECUTOR_ID",
        "SPARK_RESOURCE_PROFILE_ID",
        "SPARK_EXECUTOR_ATTRIBUTE_APP_ID",
        "SPARK_EXECUTOR_ATTRIBUTE_EXECUTOR_ID",
        "FOO",
        "_SPARK_AUTH_SECRET",
        "SPARK_CLASSPATH",
        "SPARK_JAVA_OPT_0",
        "SPARK_JAVA_OPT_1",
        "SPARK_JAVA_OPT_2",
        "SPARK_JAVA_OPT_3",
        "SPARK_JAVA_OPT_4",
        "SPARK_EXECUTOR_POD_IP",
        "SPARK_EXECUTOR_POD_NAME",
    ]
    env = env_values(container)
    assert [env[f"SPARK_JAVA_OPT_{i}"] for i in range(5)] == [
        f"-Dapp={APP_ID}",
        "-Dquoted=a b",
        "-Dexec=3",
        "-Dspark.authenticate=true",
        "-Dspark.driver.port=7078",
    ]


def test_executor_env_can_override_a_spark_variable_once() -> None:
    container = configure(make_conf(environment={"SPARK_EXECUTOR_CORES": "9"})).container
    assert env_names(container).count("SPARK_EXECUTOR_CORES") == 1
    assert env_values(container)["SPARK_EXECUTOR_CORES"] == "9"


def test_startup_confs_passed_as_java_options() -> None:
    opts = startup_java_opts(
        {
            "spark.authenticate": "true",
            "spark.authenticate.secret": "hidden",
            "spark.authenticate.enableSaslEncryption": "true",
            "spark.rpc.askTimeout": "10s",
            "spark.network.timeout": "120s",
            "spark.ssl.enabled": "true",
            "spark.ssl.keyPassword": "hidden",
            "spark.ssl.rpc.trustStorePassword": "hidden",
            "spark.driver.port": "7078",
            "spark.port.maxRetries": "4",
            "spark.executor.memory": "1g",
            "spark.app.name": "x",
        }
    )
    assert opts == [
        "-Dspark.authenticate=true",
        "-Dspark.authenticate.enableSaslEncryption=true",
        "-Dspark.driver.port=7078",
        "-Dspark.network.timeout=120s",
        "-Dspark.port.maxRetries=4",
        "-Dspark.rpc.askTimeout=10s",
        "-Dspark.ssl.enabled=true",
    ]


def test_unterminated_quote_in_java_options_fails_early() -> None:
    with pytest.raises(ConfigError, match=r"spark\.executor\.extraJavaOptions") as err:
        BasicExecutorStep(make_conf(extra_java_options="-Da='b"), FACTS)
    assert err.value.key == "spark.executor.extraJavaOptions"


def test_step_does_not_mutate_its_input() -> None:
    def template() -> SparkPod:
        return SparkPod(
            {"metadata": {"labels": {"a": "b"}}}, {"name": "c", "env": [{"name": "X", "value": "1"}]}
        )

    given = template()
    configure(make_conf(), pod=given)
    assert given == template()
