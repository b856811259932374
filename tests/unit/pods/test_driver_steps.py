"""The driver's feature steps (k8s_backend.pods.driver): each on its own, then through cluster mode's plan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from pod_builder_fixtures import FACTS

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.driver import DriverContext, DriverPodBuilder
from k8s_backend.pods.driver.service import service_spec_settings
from k8s_backend.pods.driver.steps import DriverEnvSecretsStep, DriverMountSecretsStep, DriverVolumesStep
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.pods.step import SparkPod

APP_ID = "spark-" + "a" * 32


def ctx(props: dict[str, str]) -> DriverContext:
    return DriverContext(properties=props, app_id=APP_ID, pod_name="app-driver", namespace="team")


def base() -> SparkPod:
    return SparkPod(
        {"spec": {"volumes": [{"name": "keep", "emptyDir": {}}]}}, {"name": "spark-kubernetes-driver"}
    )


def test_driver_secrets_are_mounted_as_spark_names_their_volumes() -> None:
    props = {
        "spark.kubernetes.driver.secrets.db-creds": "/etc/db",
        "spark.kubernetes.executor.secrets.x": "/x",
    }
    before = base()
    pod = DriverMountSecretsStep(props).configure_pod(before, ctx(props))
    assert pod.pod["spec"]["volumes"][1:] == [
        {"name": "db-creds-volume", "secret": {"secretName": "db-creds"}}
    ]
    assert pod.container["volumeMounts"] == [{"name": "db-creds-volume", "mountPath": "/etc/db"}]
    assert before == base()  # the input is not changed


def test_driver_secret_key_refs_become_env_from_secrets() -> None:
    props = {"spark.kubernetes.driver.secretKeyRef.DB_PASSWORD": "db-creds:password"}
    pod = DriverEnvSecretsStep(props).configure_pod(base(), ctx(props))
    assert pod.container["env"] == [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-creds", "key": "password"}}}
    ]


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("spark.kubernetes.driver.secretKeyRef.DB", "no-colon", "spark.kubernetes.driver.secretKeyRef.DB"),
        ("spark.kubernetes.driver.secrets.Bad_Name", "/x", "spark.kubernetes.driver.secrets.Bad_Name"),
        (
            "spark.kubernetes.driver.volumes.nfs.data.mount.path",
            "/d",
            "spark.kubernetes.driver.volumes.nfs.data",
        ),
        (
            "spark.kubernetes.driver.volumes.gluster.g.mount.path",
            "/g",
            "spark.kubernetes.driver.volumes.gluster.g",
        ),
    ],
)
def test_a_bad_driver_key_is_refused_naming_it(key: str, value: str, named: str) -> None:
    with pytest.raises(ConfigError) as error:
        DriverPodBuilder({key: value})
    assert named in str(error.value)
    assert str(error.value.key).startswith(named)


def test_driver_volumes_of_each_type_and_an_on_demand_claim() -> None:
    v = "spark.kubernetes.driver.volumes."
    props = {
        f"{v}persistentVolumeClaim.data.mount.path": "/data",
        f"{v}persistentVolumeClaim.data.options.claimName": "OnDemand",
        f"{v}persistentVolumeClaim.data.options.storageClass": "standard",
        f"{v}persistentVolumeClaim.data.options.sizeLimit": "5Gi",
        f"{v}persistentVolumeClaim.data.label.tier": "gold",
        f"{v}persistentVolumeClaim.shared.mount.path": "/shared",
        f"{v}persistentVolumeClaim.shared.mount.readOnly": "true",
        f"{v}persistentVolumeClaim.shared.options.claimName": "team-shared",
        f"{v}emptyDir.scratch.mount.path": "/scratch",
        f"{v}emptyDir.scratch.options.medium": "Memory",
        f"{v}hostPath.logs.mount.path": "/logs",
        f"{v}hostPath.logs.options.path": "/var/log/app",
    }
    step = DriverVolumesStep(props)
    pod = step.configure_pod(base(), ctx(props))
    volumes = {v["name"]: v for v in pod.pod["spec"]["volumes"]}
    # Sorted by type then name: emptyDir, hostPath, then the claims (data is index 2).
    assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "app-driver-pvc-2", "readOnly": False}
    assert volumes["shared"]["persistentVolumeClaim"] == {"claimName": "team-shared", "readOnly": True}
    assert volumes["scratch"]["emptyDir"] == {"medium": "Memory"}
    assert volumes["logs"]["hostPath"] == {"path": "/var/log/app"}
    assert {m["mountPath"] for m in pod.container["volumeMounts"]} == {
        "/data",
        "/shared",
        "/scratch",
        "/logs",
    }
    [claim] = step.additional_resources(ctx(props))
    assert claim["metadata"] == {
        "name": "app-driver-pvc-2",
        "labels": {"tier": "gold", "spark-app-selector": APP_ID},
    }
    assert claim["spec"] == {
        "storageClassName": "standard",
        "accessModes": ["ReadWriteOncePod"],
        "resources": {"requests": {"storage": "5Gi"}},
    }


def test_the_legacy_access_mode_key_applies_to_driver_claims() -> None:
    v = "spark.kubernetes.driver.volumes.persistentVolumeClaim.d."
    props = {
        f"{v}mount.path": "/d",
        f"{v}options.claimName": "OnDemand",
        f"{v}options.storageClass": "s",
        f"{v}options.sizeLimit": "1Gi",
        "spark.kubernetes.legacy.useReadWriteOnceAccessMode": "true",
    }
    [claim] = DriverVolumesStep(props).additional_resources(ctx(props))
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}),
        (
            {
                "spark.kubernetes.driver.service.ipFamilyPolicy": "PreferDualStack",
                "spark.kubernetes.driver.service.ipFamilies": "IPv6, IPv4",
                "spark.kubernetes.driver.service.publishNotReadyAddresses": "true",
            },
            {
                "ipFamilyPolicy": "PreferDualStack",
                "ipFamilies": ["IPv6", "IPv4"],
                "publishNotReadyAddresses": True,
            },
        ),
    ],
)
def test_service_ip_families_and_publish_not_ready(props: dict[str, str], expected: Obj) -> None:
    assert service_spec_settings(props) == expected


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"spark.kubernetes.driver.service.ipFamilyPolicy": "DualStack"}, "ipFamilyPolicy"),
        ({"spark.kubernetes.driver.service.ipFamilies": "IPv5"}, "ipFamilies"),
        ({"spark.kubernetes.driver.service.ipFamilies": "IPv4,IPv4"}, "ipFamilies"),
        ({"spark.kubernetes.driver.service.ipFamilies": "IPv4,IPv6"}, "ipFamilies"),  # with SingleStack
        ({"spark.kubernetes.driver.service.publishNotReadyAddresses": "maybe"}, "publishNotReadyAddresses"),
    ],
)
def test_bad_service_settings_are_refused_naming_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as error:
        service_spec_settings(props)
    assert error.value.key == f"spark.kubernetes.driver.service.{key}"


class AddLabel:
    """A user driver step (configured by class path: built with the properties)."""

    def __init__(self, properties: dict[str, str]) -> None:
        self.value = properties.get("test.label", "x")

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        pod = pod.copy()
        pod.pod.setdefault("metadata", {}).setdefault("labels", {})["from-step"] = self.value
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()


def test_user_driver_steps_by_class_path_and_in_code_run_after_the_built_in_ones() -> None:
    seen: list[str] = []

    class Last(AddLabel):
        def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
            seen.append(pod.pod["metadata"]["labels"]["from-step"])
            return pod

    props = {"spark.kubernetes.driver.pod.featureSteps": f"{__name__}:AddLabel", "test.label": "yes"}
    builder = DriverPodBuilder(props, [Last({})])
    pod, claims = builder.build(base(), ctx(props))
    assert pod.pod["metadata"]["labels"] == {"from-step": "yes"}
    assert seen == ["yes"]
    assert claims == []


def test_jvm_driver_step_class_names_are_refused_clearly() -> None:
    entry = "org.example.spark.MyDriverStep"
    with pytest.raises(ConfigError, match="JVM class names are refused") as error:
        DriverPodBuilder({"spark.kubernetes.driver.pod.featureSteps": entry})
    assert error.value.key == "spark.kubernetes.driver.pod.featureSteps"
    assert entry in str(error.value)


def test_an_object_without_the_step_methods_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"steps\[0\].*not a driver feature step"):
        DriverPodBuilder({}, [object()])  # type: ignore[list-item]


def test_a_built_in_driver_step_can_be_excluded_by_spark_class_name() -> None:
    props = {
        "spark.kubernetes.driver.secrets.s": "/s",
        "spark.kubernetes.driver.pod.excludedFeatureSteps": (
            "org.apache.spark.deploy.k8s.features.MountSecretsFeatureStep"
        ),
    }
    pod, _ = DriverPodBuilder(props).build(base(), ctx(props))
    assert [m["name"] for m in pod.container["volumeMounts"]] == ["spark-local-dir-1"]  # no s-volume


# Through cluster mode: what a submission with these keys creates.


def _plan(tmp_path: Path, *confs: str):  # type: ignore[no-untyped-def]
    from k8s_backend.cli.common.submit_args import parse_submit_args
    from k8s_backend.cli.submit.cluster_mode import plan_cluster
    from k8s_backend.cli.submit.submission import build_submission
    from k8s_backend.kube.masters import IN_CLUSTER_MASTER

    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster"]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=team", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ={})


def test_cluster_mode_mounts_driver_secrets_and_volumes_and_creates_the_claim(tmp_path: Path) -> None:
    v = "spark.kubernetes.driver.volumes.persistentVolumeClaim.data."
    plan = _plan(
        tmp_path,
        "spark.kubernetes.driver.secrets.db-creds=/etc/db",
        "spark.kubernetes.driver.secretKeyRef.TOKEN=api:token",
        f"{v}mount.path=/data",
        f"{v}options.claimName=OnDemand",
        f"{v}options.storageClass=standard",
        f"{v}options.sizeLimit=1Gi",
    )
    container = plan.pod["spec"]["containers"][0]
    assert container["name"] == "spark-kubernetes-driver"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/etc/db", "/data", "/opt/spark/conf"} <= mounts
    assert {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "token"}}} in container[
        "env"
    ]
    claim_name = f"{plan.names.pod}-pvc-0"
    assert [c["metadata"]["name"] for c in plan.claims] == [claim_name]
    assert plan.claims[0]["metadata"]["namespace"] == "team"
    created_pod = {**plan.pod, "metadata": {**plan.pod["metadata"], "uid": "u-1"}}
    [owned] = plan.owned_claims(created_pod)
    assert owned["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert ("create", "persistentvolumeclaims") in {(p.verb, p.resource.plural) for p in plan.needs}
    service = plan.service(created_pod)
    assert (service["spec"]["ipFamilyPolicy"], service["spec"]["ipFamilies"]) == ("SingleStack", ["IPv4"])


def test_cluster_mode_refuses_a_bad_driver_key_before_creating_anything(tmp_path: Path) -> None:
    from k8s_backend.cli.common.errors import UsageError

    with pytest.raises(UsageError, match=r"spark\.kubernetes\.driver\.service\.ipFamilyPolicy"):
        _plan(tmp_path, "spark.kubernetes.driver.service.ipFamilyPolicy=Both")


# Hadoop configuration (HadoopConfDriverFeatureStep).


def _plan_env(tmp_path: Path, environ: dict[str, str], *confs: str):  # type: ignore[no-untyped-def]
    from k8s_backend.cli.common.submit_args import parse_submit_args
    from k8s_backend.cli.submit.cluster_mode import plan_cluster
    from k8s_backend.cli.submit.submission import build_submission
    from k8s_backend.kube.masters import IN_CLUSTER_MASTER

    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster"]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=team", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ=environ)


def _hadoop_mount(pod: Obj) -> tuple[str | None, str | None]:
    container = pod["spec"]["containers"][0]
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounted = [m for m in container["volumeMounts"] if m["mountPath"] == "/opt/hadoop/conf"]
    name = volumes["hadoop-properties"]["configMap"]["name"] if mounted else None
    return name, env.get("HADOOP_CONF_DIR")


def test_hadoop_conf_dir_files_ship_in_a_config_map_mounted_on_driver_and_executors(tmp_path: Path) -> None:
    conf_dir = tmp_path / "hadoop"
    conf_dir.mkdir()
    (conf_dir / "core-site.xml").write_text("<configuration/>\n")
    (conf_dir / "hdfs-site.xml").write_text("<configuration><x/></configuration>\n")
    (conf_dir / "sub").mkdir()  # directories are not shipped, as in Spark
    plan = _plan_env(tmp_path, {"HADOOP_CONF_DIR": str(conf_dir)})
    body = plan.hadoop_config_map
    assert body is not None
    name = body["metadata"]["name"]
    assert name.endswith("-hadoop-config")
    assert set(body["data"]) == {"core-site.xml", "hdfs-site.xml"}
    assert _hadoop_mount(plan.pod) == (name, "/opt/hadoop/conf")
    assert plan.properties["spark.kubernetes.executor.hadoopConfigMapName"] == name
    created = {**plan.pod, "metadata": {**plan.pod["metadata"], "uid": "u-9"}}
    owned = plan.owned_hadoop_config_map(created)
    assert owned is not None and owned["metadata"]["ownerReferences"][0]["uid"] == "u-9"
    # The executors the driver will create mount the same ConfigMap.

    conf = KubernetesConf.from_spark_conf(plan.properties)
    executor = ExecutorPodBuilder(conf, facts=FACTS).build(_request(conf)).pod
    assert _hadoop_mount(executor) == (name, "/opt/hadoop/conf")


def test_a_named_hadoop_config_map_is_mounted_and_nothing_is_created(tmp_path: Path) -> None:
    plan = _plan_env(
        tmp_path, {"HADOOP_CONF_DIR": "/ignored"}, "spark.kubernetes.hadoop.configMapName=site-hadoop"
    )
    assert plan.hadoop_config_map is None
    assert _hadoop_mount(plan.pod) == ("site-hadoop", "/opt/hadoop/conf")
    assert plan.properties["spark.kubernetes.executor.hadoopConfigMapName"] == "site-hadoop"


def test_without_hadoop_settings_nothing_is_mounted(tmp_path: Path) -> None:
    plan = _plan_env(tmp_path, {})
    assert plan.hadoop_config_map is None
    assert _hadoop_mount(plan.pod) == (None, None)


def test_a_missing_hadoop_conf_dir_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    from k8s_backend.cli.common.errors import UsageError

    with pytest.raises(UsageError, match=r"HADOOP_CONF_DIR=.*is not a directory"):
        _plan_env(tmp_path, {"HADOOP_CONF_DIR": str(tmp_path / "nope")})
    binary = tmp_path / "bin-conf"
    binary.mkdir()
    (binary / "blob").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match=r"cannot ship blob"):
        _plan_env(tmp_path, {"HADOOP_CONF_DIR": str(binary)})


def test_client_mode_executors_mount_the_named_hadoop_config_map() -> None:

    conf = KubernetesConf.from_spark_conf(
        {"spark.kubernetes.hadoop.configMapName": "site-hadoop", "spark.kubernetes.container.image": "i"}
    )
    pod = ExecutorPodBuilder(conf, facts=FACTS).build(_request(conf)).pod
    assert _hadoop_mount(pod) == ("site-hadoop", "/opt/hadoop/conf")


def _request(conf: KubernetesConf) -> ExecutorPodRequest:
    return ExecutorPodRequest(
        executor_id=1,
        app_id=APP_ID,
        driver_url="spark://CoarseGrainedScheduler@driver:7078",
        pod_name_prefix="app",
        resource_profile=conf.executor.default_profile,
    )


def test_driver_local_dirs_are_emptydirs_listed_in_spark_local_dirs() -> None:
    from k8s_backend.pods.driver.steps import DriverLocalDirsStep

    props = {"spark.local.dir": "/tmp/a, /tmp/b", "spark.kubernetes.local.dirs.tmpfs": "true"}
    pod = DriverLocalDirsStep(props).configure_pod(base(), ctx(props))
    assert pod.pod["spec"]["volumes"][1:] == [
        {"name": "spark-local-dir-1", "emptyDir": {"medium": "Memory"}},
        {"name": "spark-local-dir-2", "emptyDir": {"medium": "Memory"}},
    ]
    assert [m["mountPath"] for m in pod.container["volumeMounts"]] == ["/tmp/a", "/tmp/b"]
    assert pod.container["env"] == [{"name": "SPARK_LOCAL_DIRS", "value": "/tmp/a,/tmp/b"}]
    generated = DriverLocalDirsStep({}, lambda: "/var/data/spark-x").configure_pod(base(), ctx({}))
    assert generated.container["env"] == [{"name": "SPARK_LOCAL_DIRS", "value": "/var/data/spark-x"}]
    assert generated.pod["spec"]["volumes"][1:] == [{"name": "spark-local-dir-1", "emptyDir": {}}]


def test_a_driver_volume_named_as_a_local_dir_backs_it_instead(tmp_path: Path) -> None:
    v = "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-local-dir-1."
    plan = _plan(tmp_path, f"{v}mount.path=/scratch", f"{v}options.claimName=scratch-claim")
    container = plan.pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SPARK_LOCAL_DIRS"] == "/scratch"
    assert not any(
        v.get("emptyDir") is not None and v["name"].startswith("spark-local-dir")
        for v in plan.pod["spec"]["volumes"]
    )


def test_a_bad_tmpfs_value_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as error:
        DriverPodBuilder({"spark.kubernetes.local.dirs.tmpfs": "sometimes"})
    assert error.value.key == "spark.kubernetes.local.dirs.tmpfs"
