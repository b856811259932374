"""Translating pod containers into local commands: environment, paths, entrypoint branches (pure)."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.local.kubelet.container import (
    EXECUTOR_MAIN,
    JDK_MODULE_OPTIONS,
    HostEnvironment,
    is_spark_container,
    translate,
)
from k8s_backend.local.kubelet.env import (
    ContainerConfigError,
    ContainerStartError,
    PodRuntime,
    expand,
    resolve_env,
)
from k8s_backend.local.kubelet.images import ImagePolicy, normalize_image
from k8s_backend.local.kubelet.nodes import Resources
from k8s_backend.local.kubelet.volumes import PathMapper, container_mounts, materialize_volumes

Obj = dict[str, Any]
RUNTIME = PodRuntime(pod_ip="127.0.0.1", host_ip="127.0.0.1", node_name="node-1")


@pytest.fixture
def host(tmp_path: Path) -> HostEnvironment:
    spark_home = tmp_path / "pyspark"
    (spark_home / "jars").mkdir(parents=True)
    (spark_home / "bin").mkdir()
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    return HostEnvironment(
        spark_home=str(spark_home),
        java=str(java),
        python=sys.executable,
        base_env={"PATH": os.environ["PATH"]},
    )


def executor_pod(**env_extra: str) -> Obj:
    """An executor pod as Spark 4.3's BasicExecutorFeatureStep and LocalDirsFeatureStep build it."""
    env = [
        {"name": "SPARK_USER", "value": "alice"},
        {"name": "SPARK_DRIVER_URL", "value": "spark://CoarseGrainedScheduler@127.0.0.1:40000"},
        {"name": "SPARK_EXECUTOR_CORES", "value": "1"},
        {"name": "SPARK_EXECUTOR_MEMORY", "value": "512m"},
        {"name": "SPARK_APPLICATION_ID", "value": "spark-abc"},
        {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"},
        {"name": "SPARK_EXECUTOR_ID", "value": "2"},
        {"name": "SPARK_RESOURCE_PROFILE_ID", "value": "0"},
        {"name": "SPARK_JAVA_OPT_10", "value": "-Dspark.driver.port=40000"},
        {"name": "SPARK_JAVA_OPT_2", "value": "-Dspark.network.timeout=60s"},
        {
            "name": "SPARK_EXECUTOR_POD_IP",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
        },
        {
            "name": "SPARK_EXECUTOR_POD_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        },
        {"name": "SPARK_LOCAL_DIRS", "value": "/var/data/spark-1234"},
        *({"name": k, "value": v} for k, v in env_extra.items()),
    ]
    return {
        "metadata": {
            "name": "app-exec-2",
            "namespace": "spark",
            "uid": "u-1",
            "labels": {"spark-role": "executor"},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "spark-kubernetes-executor",
                    "image": "apache/spark:4.0.0",
                    "args": ["executor"],
                    "env": env,
                    "resources": {"requests": {"cpu": "1", "memory": "896Mi"}, "limits": {"memory": "896Mi"}},
                    "volumeMounts": [
                        {"name": "spark-local-dir-1", "mountPath": "/var/data/spark-1234"},
                        {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"},
                    ],
                }
            ],
            "volumes": [
                {"name": "spark-local-dir-1", "emptyDir": {}},
                {
                    "name": "spark-conf-volume-exec",
                    "configMap": {
                        "name": "spark-exec-1-conf-map",
                        "items": [{"key": "log4j2.properties", "path": "log4j2.properties", "mode": 420}],
                    },
                },
            ],
        },
    }


def lookup_from(objects: dict[tuple[str, str], Obj]) -> Any:
    return lambda kind, namespace, name: objects.get((kind, name))


CONFIG_MAPS = {
    ("ConfigMap", "spark-exec-1-conf-map"): {"data": {"log4j2.properties": "rootLogger.level = info\n"}}
}


def translate_pod(
    pod: Obj, host: HostEnvironment, tmp_path: Path, objects: dict[tuple[str, str], Obj] | None = None
) -> Any:
    lookup = lookup_from(objects if objects is not None else CONFIG_MAPS)
    volumes = materialize_volumes(pod, tmp_path / "pod", shared_dir=tmp_path, lookup=lookup, runtime=RUNTIME)
    container = pod["spec"]["containers"][0]
    return translate(
        pod,
        container,
        host=host,
        runtime=RUNTIME,
        mounts=container_mounts(container, volumes),
        cwd=str(tmp_path / "cwd"),
        lookup=lookup,
    )


def test_executor_branch_builds_the_entrypoints_java_command(host: HostEnvironment, tmp_path: Path) -> None:
    command = translate_pod(executor_pod(), host, tmp_path)
    argv = list(command.argv)
    assert command.kind == "executor"
    assert argv[0] == host.java
    # Spark's JDK module options come first when the pod carries none, then SPARK_JAVA_OPT_* in numeric order.
    assert argv[1 : 1 + len(JDK_MODULE_OPTIONS)] == list(JDK_MODULE_OPTIONS)
    rest = argv[1 + len(JDK_MODULE_OPTIONS) :]
    assert rest[:4] == ["-Dspark.network.timeout=60s", "-Dspark.driver.port=40000", "-Xms512m", "-Xmx512m"]
    classpath = rest[rest.index("-cp") + 1].split(os.pathsep)
    conf_dir = str(tmp_path / "pod" / "volumes" / "spark-conf-volume-exec")
    assert classpath == [conf_dir, os.path.join(host.spark_home, "jars", "*"), str(tmp_path / "cwd")]
    main = rest.index(EXECUTOR_MAIN)
    assert rest[main + 1 :] == [
        "--driver-url", "spark://CoarseGrainedScheduler@127.0.0.1:40000",
        "--executor-id", "2",
        "--cores", "1",
        "--app-id", "spark-abc",
        "--hostname", "127.0.0.1",
        "--resourceProfileId", "0",
        "--podName", "app-exec-2",
    ]  # fmt: skip
    assert command.memory_limit == 896 * 1024 * 1024


def test_executor_environment_is_local(host: HostEnvironment, tmp_path: Path) -> None:
    command = translate_pod(executor_pod(PYSPARK_PYTHON="/usr/bin/python3-not-here"), host, tmp_path)
    env = command.env
    assert env["SPARK_HOME"] == host.spark_home
    assert env["PYSPARK_PYTHON"] == sys.executable  # the image's interpreter does not exist here
    assert env["SPARK_EXECUTOR_POD_NAME"] == "app-exec-2"
    assert env["SPARK_EXECUTOR_POD_IP"] == "127.0.0.1"
    # Mounted paths point at the pod's local volume directories, and the ConfigMap files are there.
    assert env["SPARK_LOCAL_DIRS"] == str(tmp_path / "pod" / "volumes" / "spark-local-dir-1")
    conf = Path(env["SPARK_CONF_DIR"]) / "log4j2.properties"
    assert conf.read_text() == "rootLogger.level = info\n"
    assert conf.stat().st_mode & 0o777 == 0o644
    assert env["PATH"] == os.environ["PATH"]
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"  # what the pod's hostname would resolve to


def test_module_options_are_not_repeated_when_the_pod_has_them(host: HostEnvironment, tmp_path: Path) -> None:
    command = translate_pod(
        executor_pod(SPARK_JAVA_OPT_0="--add-opens=java.base/java.lang=ALL-UNNAMED"), host, tmp_path
    )
    assert command.argv[1] == "--add-opens=java.base/java.lang=ALL-UNNAMED"
    assert "-XX:+IgnoreUnrecognizedVMOptions" not in command.argv


def test_extra_classpath_and_hadoop_conf_follow_the_entrypoint_order(
    host: HostEnvironment, tmp_path: Path
) -> None:
    pod = executor_pod(SPARK_CLASSPATH="/extra/a.jar", HADOOP_CONF_DIR="/etc/hadoop")
    command = translate_pod(pod, host, tmp_path)
    classpath = command.argv[command.argv.index("-cp") + 1].split(os.pathsep)
    assert classpath[:4] == [
        str(tmp_path / "pod" / "volumes" / "spark-conf-volume-exec"),
        "/etc/hadoop",
        "/extra/a.jar",
        os.path.join(host.spark_home, "jars", "*"),
    ]


def test_an_executor_without_its_driver_url_cannot_start(host: HostEnvironment, tmp_path: Path) -> None:
    pod = executor_pod()
    container = pod["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "SPARK_DRIVER_URL"]
    with pytest.raises(ContainerStartError, match="no SPARK_DRIVER_URL environment variable"):
        translate_pod(pod, host, tmp_path)


def test_no_java_is_a_start_error_naming_the_fix(host: HostEnvironment, tmp_path: Path) -> None:
    missing = HostEnvironment(spark_home=host.spark_home, java="", python=sys.executable)
    with pytest.raises(ContainerStartError, match="set JAVA_HOME or put java on PATH"):
        translate_pod(executor_pod(), missing, tmp_path)


def test_missing_config_map_is_a_config_error(host: HostEnvironment, tmp_path: Path) -> None:
    with pytest.raises(ContainerConfigError, match='configmap "spark-exec-1-conf-map" not found'):
        translate_pod(executor_pod(), host, tmp_path, objects={})


def test_driver_branch_is_a_client_mode_spark_submit(host: HostEnvironment, tmp_path: Path) -> None:
    pod = executor_pod()
    container = pod["spec"]["containers"][0]
    container["args"] = [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        "local:///opt/spark/work-dir/app.py",
    ]
    container["env"].append(
        {"name": "SPARK_DRIVER_BIND_ADDRESS", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    )
    command = translate_pod(pod, host, tmp_path)
    assert command.kind == "driver"
    conf_dir = tmp_path / "pod" / "volumes" / "spark-conf-volume-exec"
    assert list(command.argv) == [
        os.path.join(host.spark_home, "bin", "spark-submit"),
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=127.0.0.1",
        "--deploy-mode", "client",
        "--properties-file", str(conf_dir / "spark.properties"),
        "--class", "org.apache.spark.deploy.PythonRunner",
        str(tmp_path / "cwd" / "app.py"),
    ]  # fmt: skip


def test_plain_containers_run_their_command_and_unknown_ones_idle(
    host: HostEnvironment, tmp_path: Path
) -> None:
    pod: Obj = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "c", "image": "python", "command": ["python3", "-c"], "args": ["print(1)"]}
            ]
        },
    }
    command = translate_pod(pod, host, tmp_path)
    assert command.kind == "command"
    assert os.path.isabs(command.argv[0]) and command.argv[1:] == ("-c", "print(1)")
    pod["spec"]["containers"][0]["command"] = ["/usr/local/bin/envoy-that-is-not-installed"]
    assert translate_pod(pod, host, tmp_path).kind == "idle"
    pod["spec"]["containers"][0] = {"name": "c", "image": "nginx"}
    assert translate_pod(pod, host, tmp_path).kind == "idle"


def test_our_own_command_runs_on_this_interpreter_when_it_is_not_on_path(
    host: HostEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pod: Obj = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "spark", "args": ["k8s-backend", "submit", "app.py"]}]
        },
    }
    monkeypatch.setattr("k8s_backend.local.kubelet.container.shutil.which", lambda *a, **k: None)
    command = translate_pod(pod, host, tmp_path)
    assert command.kind == "command"
    assert command.argv == (host.python, "-m", "k8s_backend.cli.main", "submit", "app.py")


def test_spark_container_detection() -> None:
    assert is_spark_container({"args": ["executor"]})
    assert is_spark_container({"command": ["/opt/entrypoint.sh"], "args": ["driver", "x"]})
    assert not is_spark_container({"command": ["python"], "args": ["executor"]})
    assert not is_spark_container({"args": ["python", "x.py"]})


# -- environment -------------------------------------------------------------------------------------


def test_env_resolution_covers_field_refs_resource_refs_and_references() -> None:
    secret = {"data": {"password": base64.b64encode(b"s3cret").decode()}}
    objects = {("ConfigMap", "cm"): {"data": {"A": "1", "B": "2"}}, ("Secret", "sec"): secret}
    pod: Obj = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "x"}},
        "spec": {"serviceAccountName": "sa"},
    }
    container: Obj = {
        "name": "c",
        "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m"}},
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {
                "name": "MEM_MI",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
            {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": True}}},
            {"name": "GREETING", "value": "$(NAME) in $(NS), $$(NAME) and $(UNKNOWN)"},
        ],
    }
    runtime = PodRuntime(node_name="node-1", node_allocatable=Resources(4000, 0))
    env = resolve_env(pod, container, runtime, lookup_from(objects))
    assert env == {
        "CM_A": "1",
        "CM_B": "2",
        "NAME": "p",
        "NS": "ns",
        "APP": "x",
        "NODE": "node-1",
        "HOST_IP": "127.0.0.1",
        "SA": "sa",
        "MEM_MI": "1024",
        "CPU": "1",  # rounded up to whole cores, as the kubelet does
        "CPU_LIMIT": "4",  # no limit: the node's allocatable
        "PASS": "s3cret",
        "GREETING": "p in ns, $(NAME) and $(UNKNOWN)",
    }


def test_missing_key_in_a_required_reference_is_a_config_error() -> None:
    container = {
        "name": "c",
        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope"}}}],
    }
    pod = {"metadata": {"name": "p", "namespace": "ns"}}
    with pytest.raises(ContainerConfigError, match="couldn't find key nope in ConfigMap ns/cm"):
        resolve_env(pod, container, RUNTIME, lookup_from({("ConfigMap", "cm"): {"data": {}}}))


def test_unsupported_field_path_is_named() -> None:
    container = {
        "name": "c",
        "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}],
    }
    with pytest.raises(ContainerConfigError, match=r"unsupported fieldPath 'status\.phase'"):
        resolve_env({"metadata": {"name": "p"}}, container, RUNTIME, lookup_from({}))


def test_expand_only_known_names() -> None:
    assert expand("$(A)-$(B)-$$-$", {"A": "1"}) == "1-$(B)-$-$"


# -- volumes and paths ---------------------------------------------------------------------------------


def test_volumes_secret_items_sub_path_and_shared_claims(tmp_path: Path) -> None:
    objects = {("Secret", "s"): {"data": {"k": base64.b64encode(b"v").decode()}}}
    pod: Obj = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "volumes": [
                {"name": "sec", "secret": {"secretName": "s", "items": [{"key": "k", "path": "dir/file"}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "claim-1"}},
                {"name": "host", "hostPath": {"path": "/etc"}},
                {
                    "name": "info",
                    "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]},
                },
            ]
        },
    }
    volumes = materialize_volumes(
        pod, tmp_path / "pod", shared_dir=tmp_path / "shared", lookup=lookup_from(objects), runtime=RUNTIME
    )
    assert (Path(volumes["sec"]) / "dir" / "file").read_bytes() == b"v"
    assert (Path(volumes["sec"]) / "dir" / "file").stat().st_mode & 0o777 == 0o600  # this user's only
    assert volumes["data"] == str(tmp_path / "shared" / "pvcs" / "ns" / "claim-1")
    assert volumes["host"] == "/etc"
    assert (Path(volumes["info"]) / "name").read_text() == "p"
    mounts = container_mounts(
        {"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/data/", "subPath": "sub"}]}, volumes
    )
    assert mounts == {"/data": os.path.join(volumes["data"], "sub")}


def test_path_mapper_prefers_the_longest_mount() -> None:
    mapper = PathMapper({"/opt/spark": "/local/spark", "/opt/spark/conf": "/vol/conf"})
    assert mapper.map("/opt/spark/conf/x") == "/vol/conf/x"
    assert mapper.map("/opt/spark/jars") == "/local/spark/jars"
    assert mapper.map("/opt/sparkle") is None
    assert mapper.map_value("/opt/spark/a,/opt/spark/conf") == "/local/spark/a,/vol/conf"
    assert mapper.map_value("/opt/spark/a,/tmp") == "/opt/spark/a,/tmp"
    assert mapper.map_value("-Dx=/opt/spark") == "-Dx=/opt/spark"


# -- images ------------------------------------------------------------------------------------------


def test_image_policy_matching() -> None:
    policy = ImagePolicy(["apache/spark", "python:3.11", "registry.local/team/app:v1"])
    assert policy.is_known("apache/spark:4.0.0") and policy.is_known("docker.io/apache/spark")
    assert policy.is_known("python:3.11") and policy.is_known("docker.io/library/python:3.11")
    assert not policy.is_known("python:3.12") and not policy.is_known("python")
    assert policy.is_known("registry.local/team/app:v1") and not policy.is_known("registry.local/team/app:v2")
    assert ImagePolicy().is_known("anything:at-all")
    assert normalize_image("localhost:5000/x") == ("localhost:5000/x", "latest")


def test_image_policy_rejects_a_bare_string_and_backs_off() -> None:
    with pytest.raises(TypeError, match=r"pass a collection such as \['spark'\]"):
        ImagePolicy("spark")  # type: ignore[arg-type]
    policy = ImagePolicy(backoff_initial=1, backoff_max=5)
    assert [policy.backoff(i) for i in range(5)] == [1, 2, 4, 5, 5]
    assert policy.pull_error("x")[0] == "ErrImagePull"
    assert policy.back_off("x") == ("ImagePullBackOff", 'Back-off pulling image "x"')
