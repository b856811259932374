"""Cluster mode's objects: driver pod, Service, ConfigMap, shipped files and the driver's properties."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, driver_master, plan_cluster, plan_names
from k8s_backend.cli.submit.driver_files import APP_FILES_DIR
from k8s_backend.cli.submit.driver_sizing import driver_resources
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.pods.driver.names import DriverNames

NAMES = DriverNames(
    app_id="spark-" + "a" * 32,
    pod="myapp-driver",
    service="myapp-driver-svc",
    config_map="spark-drv-1-conf-map",
    namespace="team",
)
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myapp-driver", "uid": "u-1"}}


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "main.py"
    path.write_text("print('main')\n")
    return path


def submission(app: Path, *extra: str, mode: str = "cluster") -> Submission:
    argv = [
        "--master",
        "pyk8s://https://k8s.example:6443",
        "--deploy-mode",
        mode,
        "--conf",
        "spark.kubernetes.container.image=spark:py",
        "--conf",
        "spark.kubernetes.namespace=team",
        *extra,
        str(app),
        "arg1",
    ]
    return build_submission(parse_submit_args(argv), {})


def plan(sub: Submission, master: str = IN_CLUSTER_MASTER) -> ClusterPlan:
    return plan_cluster(sub, master, api_url="https://k8s.example:6443", names=NAMES, environ={})


def container(p: ClusterPlan) -> dict:  # type: ignore[type-arg]
    return p.pod["spec"]["containers"][0]  # type: ignore[no-any-return]


def test_the_driver_pod_is_spark_shaped(app: Path) -> None:
    p = plan(submission(app, "--name", "My App", "--driver-memory", "2g", "--driver-cores", "2"))
    meta = p.pod["metadata"]
    assert (meta["name"], meta["namespace"]) == ("myapp-driver", "team")
    assert meta["labels"]["spark-app-selector"] == NAMES.app_id
    assert meta["labels"]["spark-role"] == "driver"
    assert meta["labels"]["spark-app-name"] == "my-app"
    assert p.pod["spec"]["restartPolicy"] == "Never"
    c = container(p)
    assert (c["name"], c["image"]) == ("spark-kubernetes-driver", "spark:py")
    # 2g plus Spark's non-JVM overhead factor 0.4 (819 MiB), 2 cores.
    assert c["resources"]["requests"] == {"memory": "2867Mi", "cpu": "2"}
    assert c["resources"]["limits"] == {"memory": "2867Mi"}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {
        "driver-rpc-port": 7078,
        "blockmanager": 7079,
        "spark-ui": 4040,
    }
    env = {e["name"]: e for e in c["env"]}
    assert env["SPARK_APPLICATION_ID"]["value"] == NAMES.app_id
    assert env["SPARK_CONF_DIR"]["value"] == "/opt/spark/conf"
    assert env["SPARK_DRIVER_BIND_ADDRESS"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert {"name": "spark-conf-volume-driver", "mountPath": "/opt/spark/conf"} in c["volumeMounts"]


@pytest.mark.parametrize(
    ("extra", "allowed"),
    [
        ([], False),  # Spark 4.3's default, for the driver as for the executors
        (["--conf", "spark.kubernetes.securityContext.allowPrivilegeEscalation=true"], True),
        (
            [
                "--conf", "spark.kubernetes.securityContext.allowPrivilegeEscalation=true",
                "--conf", "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation=false",
            ],
            False,
        ),
    ],
)
def test_the_driver_container_sets_allow_privilege_escalation(
    app: Path, extra: list[str], allowed: bool
) -> None:
    security = container(plan(submission(app, *extra)))["securityContext"]
    assert security == {"allowPrivilegeEscalation": allowed}


def test_the_container_runs_our_client_mode_on_the_shipped_files(app: Path, tmp_path: Path) -> None:
    dep = tmp_path / "dep.py"
    dep.write_text("X = 1\n")
    p = plan(
        submission(app, "--py-files", str(dep), "--conf", "spark.kubernetes.executor.useDriverPodIP=false")
    )
    args = container(p)["args"]
    assert args[:4] == ["k8s-backend", "submit", "--deploy-mode", "client"]
    assert args[args.index("--properties-file") + 1] == "/opt/spark/conf/spark.properties"
    assert "spark.driver.bindAddress=$(SPARK_DRIVER_BIND_ADDRESS)" in args
    assert "spark.driver.host=$(SPARK_DRIVER_BIND_ADDRESS)" not in args  # the Service name is used
    assert args[args.index("--py-files") + 1] == f"{APP_FILES_DIR}/dep.py"
    assert args[-2:] == [f"{APP_FILES_DIR}/main.py", "arg1"]
    assert "command" not in container(p)  # the image's entrypoint passes the arguments through


def test_executors_reach_the_driver_by_pod_ip_by_default(app: Path) -> None:
    assert "spark.driver.host=$(SPARK_DRIVER_BIND_ADDRESS)" in container(plan(submission(app)))["args"]


def test_local_uris_are_passed_as_they_are_and_not_shipped(app: Path) -> None:
    sub = submission(app)
    sub = build_submission(
        parse_submit_args(
            [
                "--master",
                "pyk8s://https://k8s.example:6443",
                "--deploy-mode",
                "cluster",
                "--conf",
                "spark.kubernetes.container.image=spark:py",
                "local:///opt/app/job.py",
            ]
        ),
        {},
    )
    p = plan(sub)
    assert container(p)["args"][-1] == "local:///opt/app/job.py"
    assert not any(key.startswith("file.") for key in p.data)
    # Only the conf volume and the driver's local dir (Spark's LocalDirsFeatureStep): no files volume.
    assert [v["name"] for v in p.pod["spec"]["volumes"]] == ["spark-conf-volume-driver", "spark-local-dir-1"]


def test_the_driver_properties_point_the_driver_at_its_pod_and_service(app: Path) -> None:
    p = plan(
        submission(
            app,
            "--conf",
            "spark.kubernetes.authenticate.submission.oauthToken=secret",
            "--files",
            str(app),
        )
    )
    props = parse_properties(p.data["spark.properties"])
    assert props["spark.master"] == IN_CLUSTER_MASTER
    assert props["spark.app.id"] == NAMES.app_id
    assert props["spark.kubernetes.driver.pod.name"] == "myapp-driver"
    assert props["spark.driver.host"] == "myapp-driver-svc.team.svc"
    assert props["spark.kubernetes.submitInDriver"] == "true"
    assert props["spark.kubernetes.executor.podNamePrefix"] == "myapp"
    assert props[f"spark.kubernetes.executor.annotation.{DRIVER_POD_ANNOTATION}"] == "myapp-driver"
    assert not any(k.startswith("spark.kubernetes.authenticate.submission.") for k in props)
    assert "spark.files" not in props  # given as --files on the command line, with in-pod paths


def test_service_and_config_map_are_owned_by_the_driver_pod(app: Path) -> None:
    p = plan(submission(app))
    service = p.service(POD)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"spark-app-selector": NAMES.app_id, "spark-role": "driver"}
    assert [port["name"] for port in service["spec"]["ports"]] == [
        "driver-rpc-port",
        "blockmanager",
        "spark-ui",
    ]
    config_map = p.config_map(POD)
    for obj in (service, config_map):
        assert obj["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "myapp-driver", "uid": "u-1", "controller": True}
        ]
        assert obj["metadata"]["labels"]["spark-app-selector"] == NAMES.app_id
    assert config_map["immutable"] is True
    assert config_map["data"]["file.main.py"] == "print('main')\n"


def test_binary_files_travel_as_binary_data(app: Path, tmp_path: Path) -> None:
    archive = tmp_path / "deps.zip"
    archive.write_bytes(b"PK\x03\x04\xff\xfe")
    p = plan(submission(app, "--py-files", str(archive)))
    assert base64.b64decode(p.config_map(POD)["binaryData"]["file.deps.zip"]) == b"PK\x03\x04\xff\xfe"
    files_volume = next(v for v in p.pod["spec"]["volumes"] if v["name"] == "k8s-backend-app-files")
    assert {item["path"] for item in files_volume["configMap"]["items"]} == {"main.py", "deps.zip"}


def test_application_files_too_big_for_a_config_map_are_refused_with_the_fix(
    app: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big.py"
    big.write_text("x" * 5000)
    with pytest.raises(UsageError, match=r"too big to travel .*local:///path/in/image"):
        plan(submission(app, "--py-files", str(big), "--conf", "spark.kubernetes.configMap.maxSize=4000"))


def test_two_files_with_one_name_are_refused(app: Path, tmp_path: Path) -> None:
    other = tmp_path / "sub"
    other.mkdir()
    (other / "main.py").write_text("")
    with pytest.raises(UsageError, match="two application files are named main.py"):
        plan(submission(app, "--files", str(other / "main.py")))


def test_conf_dir_files_ride_along_but_not_spark_conf(app: Path, tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "log4j2.properties").write_text("rootLogger.level=info\n")
    (conf_dir / "spark-defaults.conf").write_text("spark.x=1\n")
    p = plan_cluster(
        submission(app), IN_CLUSTER_MASTER, names=NAMES, environ={"SPARK_CONF_DIR": str(conf_dir)}
    )
    assert "log4j2.properties" in p.data
    assert "spark-defaults.conf" not in p.data
    conf_volume = p.pod["spec"]["volumes"][0]["configMap"]
    assert {i["key"] for i in conf_volume["items"]} == {"spark.properties", "log4j2.properties"}


def test_driver_labels_annotations_env_and_selectors(app: Path) -> None:
    p = plan(
        submission(
            app,
            "--conf",
            "spark.kubernetes.driver.label.team=data",
            "--conf",
            "spark.kubernetes.driver.annotation.note=x",
            "--conf",
            "spark.kubernetes.driverEnv.MODE=fast",
            "--conf",
            "spark.kubernetes.node.selector.disk=ssd",
            "--conf",
            "spark.kubernetes.authenticate.driver.serviceAccountName=spark",
            "--conf",
            "spark.pyspark.python=/usr/bin/python3.11",
        )
    )
    assert {"name": "PYSPARK_PYTHON", "value": "/usr/bin/python3.11"} in container(p)["env"]
    assert p.pod["metadata"]["labels"]["team"] == "data"
    assert p.pod["metadata"]["annotations"] == {"note": "x"}
    assert {"name": "MODE", "value": "fast"} in container(p)["env"]
    assert p.pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert p.pod["spec"]["serviceAccountName"] == "spark"


def test_reserved_driver_labels_are_refused(app: Path) -> None:
    with pytest.raises(UsageError, match="spark-role is reserved"):
        plan(submission(app, "--conf", "spark.kubernetes.driver.label.spark-role=x"))


def test_a_driver_pod_template_is_the_starting_point(app: Path, tmp_path: Path) -> None:
    template = tmp_path / "driver.yaml"
    template.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {tier: gold}\nspec:\n"
        "  priorityClassName: high\n  containers:\n  - name: sidecar\n    image: busybox\n"
        "  - name: main\n    image: ignored\n    env: [{name: KEEP, value: '1'}]\n"
    )
    p = plan(
        submission(
            app,
            "--conf",
            f"spark.kubernetes.driver.podTemplateFile={template}",
            "--conf",
            "spark.kubernetes.driver.podTemplateContainerName=main",
        )
    )
    assert p.pod["metadata"]["labels"]["tier"] == "gold"
    assert p.pod["spec"]["priorityClassName"] == "high"
    names = [c["name"] for c in p.pod["spec"]["containers"]]
    assert names == ["sidecar", "main"]
    main = p.pod["spec"]["containers"][1]
    assert main["image"] == "spark:py"
    assert {"name": "KEEP", "value": "1"} in main["env"]
    with pytest.raises(UsageError, match="spark.kubernetes.driver.podTemplateFile") as caught:
        plan(submission(app, "--conf", f"spark.kubernetes.driver.podTemplateFile={tmp_path / 'no.yaml'}"))
    assert "Could not load the driver pod template" in str(caught.value)
    assert "executor" not in str(caught.value)


def test_driver_resources_follow_spark_rules() -> None:
    assert driver_resources({}).memory == "1433Mi"  # 1g + max(int(0.4 x 1024), 384)
    assert driver_resources({"spark.driver.memoryOverhead": "100m"}).memory == "1124Mi"
    assert driver_resources({"spark.driver.memoryOverheadFactor": "0.1"}).memory == "1408Mi"  # 384 minimum
    assert driver_resources(
        {"spark.driver.memory": "4g", "spark.kubernetes.memoryOverheadFactor": "0.5"}
    ).memory == ("6144Mi")
    limited = driver_resources(
        {"spark.kubernetes.driver.request.cores": "500m", "spark.kubernetes.driver.limit.cores": "2"}
    )
    assert (limited.cpu_request, limited.cpu_limit) == ("500m", "2")
    with pytest.raises(UsageError, match="spark.driver.memory=lots is not a size"):
        driver_resources({"spark.driver.memory": "lots"})
    with pytest.raises(UsageError, match="spark.driver.cores=0 is invalid"):
        driver_resources({"spark.driver.cores": "0"})


def test_names_follow_spark_and_can_be_chosen(app: Path) -> None:
    names = plan_names(submission(app, "--name", "Pi Job"), app_id="spark-1", unique_id="abc")
    assert (names.pod, names.config_map) == (names.pod, "spark-drv-abc-conf-map")
    assert names.pod.startswith("pi-job-") and names.pod.endswith("-driver")
    assert names.service == names.pod + "-svc"
    chosen = plan_names(submission(app, "--conf", "spark.kubernetes.driver.pod.name=mine"), unique_id="abc")
    assert chosen.pod == "mine"
    long_name = plan_names(submission(app, "--name", "x" * 70), unique_id="abc")
    assert long_name.service == "spark-abc-driver-svc"  # a Service name is a DNS label (63 characters)
    with pytest.raises(UsageError, match="spark.kubernetes.driver.pod.name=Bad_Name is invalid"):
        plan_names(submission(app, "--conf", "spark.kubernetes.driver.pod.name=Bad_Name"))
    with pytest.raises(UsageError, match="is not a valid Kubernetes name"):
        plan_names(submission(app, "--conf", "spark.kubernetes.driver.resourceNamePrefix=Bad_Prefix"))


def test_the_driver_master_for_each_kind_of_cluster(app: Path) -> None:
    sub = submission(app)
    assert driver_master(sub, "https://k8s.example:6443") == IN_CLUSTER_MASTER
    assert driver_master(sub, "http://127.0.0.1:4321") == "pyk8s://http://127.0.0.1:4321"  # a local cluster
    assert driver_master(sub, "https://127.0.0.1:4321") == IN_CLUSTER_MASTER  # kind: pods use the service
    assert driver_master(sub, "https://x", local_url="http://127.0.0.1:9") == "pyk8s://http://127.0.0.1:9"
    explicit = submission(app, "--conf", "spark.kubernetes.driver.master=k8s://https://10.0.0.1:443")
    assert driver_master(explicit, "http://127.0.0.1:1") == "pyk8s://https://10.0.0.1:443"


LOOPBACK = "http://127.0.0.1:5"
TOKEN_FILE = "/opt/spark/secrets/k8s-token/token"


def loopback_plan(sub: Submission, **kwargs: str) -> ClusterPlan:
    return plan_cluster(sub, "pyk8s://" + LOOPBACK, api_url=LOOPBACK, names=NAMES, environ={}, **kwargs)


def token_of(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["token"]).decode()


def assert_no_token_text(p: ClusterPlan, *tokens: str) -> None:
    text = json.dumps([p.pod, p.properties, p.data, p.binary, p.config_map(POD)])
    for token in tokens:
        assert token not in text


def test_a_loopback_driver_borrows_the_submission_token_through_a_secret(app: Path) -> None:
    sub = submission(app, "--conf", "spark.kubernetes.authenticate.submission.oauthToken=tok-sub")
    p = loopback_plan(sub)
    assert p.properties["spark.kubernetes.authenticate.oauthTokenFile"] == TOKEN_FILE
    assert parse_properties(p.data["spark.properties"])["spark.kubernetes.authenticate.oauthTokenFile"] == (
        TOKEN_FILE
    )
    secret = p.secret(POD)
    assert secret is not None and token_of(secret) == "tok-sub"
    assert_no_token_text(p, "tok-sub")
    assert plan(sub).secret(POD) is None  # an in-cluster driver uses its service account
    assert "spark.kubernetes.authenticate.oauthTokenFile" not in plan(sub).properties
    own = submission(
        app,
        "--conf",
        "spark.kubernetes.authenticate.submission.oauthToken=tok-sub",
        "--conf",
        "spark.kubernetes.authenticate.oauthToken=driver-tok",
    )
    own_secret = loopback_plan(own).secret(POD)
    assert own_secret is not None and token_of(own_secret) == "driver-tok"


def test_a_local_cluster_token_reaches_the_driver_through_a_secret(app: Path) -> None:
    p = loopback_plan(submission(app), submission_token="local-tok")
    secret = p.secret(POD)
    assert secret is not None and token_of(secret) == "local-tok"
    assert p.properties["spark.kubernetes.authenticate.oauthTokenFile"] == TOKEN_FILE
    assert_no_token_text(p, "local-tok")
    assert "local-tok" not in repr(p)


@pytest.mark.parametrize(
    ("given", "file_key"),
    [
        (
            "spark.kubernetes.authenticate.driver.oauthToken",
            "spark.kubernetes.authenticate.driver.oauthTokenFile",
        ),
        (
            "spark.kubernetes.authenticate.driver.mounted.oauthToken",
            "spark.kubernetes.authenticate.driver.mounted.oauthTokenFile",
        ),
        ("spark.kubernetes.authenticate.oauthToken", "spark.kubernetes.authenticate.oauthTokenFile"),
    ],
)
def test_a_driver_token_goes_into_a_secret_mounted_into_the_driver(
    app: Path, given: str, file_key: str
) -> None:
    p = plan(submission(app, "--conf", f"{given}=TOPSECRET"))
    assert_no_token_text(p, "TOPSECRET")
    assert not [k for k in p.properties if k.endswith("oauthToken")]
    assert p.properties[file_key] == TOKEN_FILE
    secret = p.secret({**POD, "metadata": {**POD["metadata"], "namespace": "team"}})
    assert secret is not None and token_of(secret) == "TOPSECRET"
    assert secret["metadata"]["name"] == "myapp-driver-token"
    assert secret["metadata"]["namespace"] == "team"
    assert secret["metadata"]["labels"]["spark-app-selector"] == NAMES.app_id
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    container = p.pod["spec"]["containers"][0]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/opt/spark/secrets/k8s-token"]
    assert mount["readOnly"] is True
    (volume,) = [v for v in p.pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == "myapp-driver-token"
    # A kubelet running the pod on this host substitutes the file's local path for the argument.
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["K8S_BACKEND_API_TOKEN_FILE"] == TOKEN_FILE
    assert f"{file_key}=$(K8S_BACKEND_API_TOKEN_FILE)" in container["args"]


def test_only_the_token_the_driver_would_use_is_kept(app: Path) -> None:
    both = plan(
        submission(
            app,
            "--conf",
            "spark.kubernetes.authenticate.driver.oauthToken=TOPSECRET",
            "--conf",
            "spark.kubernetes.authenticate.oauthToken=TOPSECRET2",
        )
    )
    secret = both.secret(POD)
    assert secret is not None and token_of(secret) == "TOPSECRET2"  # the plain family is read first
    assert_no_token_text(both, "TOPSECRET", "TOPSECRET2")
    # As Spark's DriverKubernetesCredentialsFeatureStep: a driver.* token joins the user's driver.mounted.*
    # family (the one a cluster-mode driver reads), whose own keys pass through untouched.
    joined = plan(
        submission(
            app,
            "--conf",
            "spark.kubernetes.authenticate.driver.mounted.caCertFile=/ca.crt",
            "--conf",
            "spark.kubernetes.authenticate.driver.oauthToken=TOPSECRET",
        )
    )
    secret = joined.secret(POD)
    assert secret is not None and token_of(secret) == "TOPSECRET"
    assert joined.properties["spark.kubernetes.authenticate.driver.mounted.oauthTokenFile"] == TOKEN_FILE
    assert joined.properties["spark.kubernetes.authenticate.driver.mounted.caCertFile"] == "/ca.crt"
    assert not [k for k in joined.properties if k.startswith("spark.kubernetes.authenticate.driver.o")]
    assert_no_token_text(joined, "TOPSECRET")
    no_token = plan(submission(app))
    assert no_token.secret(POD) is None
    assert all(v["name"] != "k8s-backend-api-token" for v in no_token.pod["spec"]["volumes"])


def test_custom_ports_reach_pod_and_service(app: Path) -> None:
    p = plan(submission(app, "--conf", "spark.driver.port=9000", "--conf", "spark.ui.port=0"))
    ports = {port["name"]: port["port"] for port in p.service(POD)["spec"]["ports"]}
    assert ports == {"driver-rpc-port": 9000, "blockmanager": 7079, "spark-ui": 4040}
    assert parse_properties(p.data["spark.properties"])["spark.driver.port"] == "9000"
    with pytest.raises(UsageError, match="spark.ui.port=70000 is invalid"):
        plan(submission(app, "--conf", "spark.ui.port=70000"))
