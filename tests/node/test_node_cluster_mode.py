"""The driver image and a driver pod's in-cluster access to the API server, on the real node.

- The driver image (the Spark image plus this checkout's k8s_backend, as docker/Dockerfile builds it): a
  pod of it runs as the image's user 185 in /opt/spark/work-dir, imports k8s_backend from the image's
  dist-packages and Spark's own pyspark and py4j (PYTHONPATH), finds the bridge jar the wheel carries
  (the image has no JDK) and runs the ``k8s-backend`` command.
- In-cluster configuration: a pod of it with the ServiceAccount of examples/kubernetes/driver-rbac.yaml
  (applied with kubectl as a user would) lists pods through k8s_backend's kube port with nothing but
  what the kubelet gave it: ``KUBERNETES_SERVICE_HOST``/``_PORT`` (the ``kubernetes`` Service's
  ClusterIP, which reaches the API server through the node's service proxy), the projected token and
  the CA. What the Role does not grant (reading Secrets) is refused.
- Cluster mode: ``k8s-backend submit --deploy-mode cluster`` with the driver image and that account.
  The driver pod runs the application with k8s_backend's backend, reaching the API server in-cluster
  at Spark's default master, ``https://kubernetes.default.svc``: there is no cluster DNS here, so the
  driver's pod template maps that name to the Service's ClusterIP (``hostAliases``). Its executors, in
  the Spark image, reach it at its pod IP (``spark.kubernetes.executor.useDriverPodIP``, the default),
  not through its headless Service's name, which nothing here resolves.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.incluster import IN_CLUSTER_HOSTS
from k8s_backend.kube.port import PODS, SERVICES
from k8s_backend.local.node import NodeBuilder, host, service_proxy
from k8s_backend.local.node.images import ImageBuilder
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "real" / "apps" / "whoami_job.py"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DRIVER_RBAC = ROOT / "examples" / "kubernetes" / "driver-rbac.yaml"
SITE = "/usr/local/lib/python3.11/dist-packages"

IN_THE_IMAGE = """
import json, os, shutil, subprocess, sys
from importlib import metadata
import k8s_backend, kubernetes, py4j, pyspark
from k8s_backend.spark.jar import bridge_jar
cli = subprocess.run(["k8s-backend", "--help"], capture_output=True, text=True)
print(json.dumps({
    "uid": os.getuid(), "cwd": os.getcwd(), "python": list(sys.version_info[:2]),
    "k8s_backend": k8s_backend.__file__, "k8s_backend_version": metadata.version("k8s_backend"),
    "pyspark": pyspark.__file__, "pyspark_version": pyspark.__version__, "py4j": py4j.__file__,
    "jar": str(bridge_jar(build=False)),
    "cli": [shutil.which("k8s-backend"), cli.returncode, cli.stdout[:200] + cli.stderr[-2000:]],
}))
"""

IN_CLUSTER = """
import json, os
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.config import build_client_settings
from k8s_backend.kube.port import PODS, SECRETS, ApiError
settings = build_client_settings(ApiClientConf())
api = OfficialKubernetesApi.from_conf(ApiClientConf(), namespace_default="default")
pods = sorted(p["metadata"]["name"] for p in api.list(PODS, "default").items)
try:
    api.list(SECRETS, "default")
    secrets = 200
except ApiError as error:
    secrets = error.status
print(json.dumps({
    "env": [os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")],
    "host": settings.configuration.host, "source": settings.source, "pods": pods, "secrets": secrets,
}))
"""


@pytest.fixture(scope="module")
def driver_image(node_cluster: LocalCluster) -> str:
    """The driver image, built (or found in the cache) and imported into the node's containerd."""
    # This checkout's wheel: under tox, k8s_backend is imported from an installed copy, not from here.
    image = ImageBuilder().driver(checkout=ROOT)
    node_cluster.node.import_image(NodeBuilder().ensure(), image)
    return image.name


def run_to_end(cluster: LocalCluster, name: str, spec: dict[str, Any], timeout: float = 240) -> str:
    """Create a pod (restartPolicy Never), wait until its container ended; its log (asserting exit 0)."""
    api = cluster.api()
    api.create(PODS, "default", {"metadata": {"name": name}, "spec": {"restartPolicy": "Never", **spec}})

    def ended() -> bool:
        statuses = (api.get(PODS, "default", name).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and all((s.get("state") or {}).get("terminated") for s in statuses)

    assert cluster.wait_until(ended, timeout=timeout), api.get(PODS, "default", name)
    pod = api.get(PODS, "default", name)
    log = cluster.node.container_log(pod, spec["containers"][0]["name"])
    state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 0, (state, log[-4000:])
    api.delete(PODS, "default", name)
    return log


def last_json(log: str) -> dict[str, Any]:
    lines = [line for line in log.splitlines() if line.startswith("{")]
    assert lines, log[-4000:]
    return dict(json.loads(lines[-1]))


def test_a_pod_of_the_driver_image_runs_k8s_backend_and_sparks_pyspark_as_uid_185(
    node_cluster: LocalCluster, driver_image: str
) -> None:
    container = {"name": "check", "image": driver_image, "imagePullPolicy": "Never",
                 "args": ["python3", "-c", IN_THE_IMAGE]}  # fmt: skip
    seen = last_json(run_to_end(node_cluster, "driver-image", {"containers": [container]}))
    assert (seen["uid"], seen["cwd"], seen["python"]) == (185, "/opt/spark/work-dir", [3, 11])
    assert seen["k8s_backend"] == f"{SITE}/k8s_backend/__init__.py"
    assert seen["k8s_backend_version"] == metadata.version("k8s_backend")
    # Spark's own pyspark and py4j, from the image's PYTHONPATH (no pip pyspark in the image).
    assert seen["pyspark"] == "/opt/spark/python/pyspark/__init__.py"
    assert seen["pyspark_version"] == metadata.version("pyspark")
    assert seen["py4j"].startswith("/opt/spark/python/lib/py4j-")
    assert seen["jar"] == f"{SITE}/k8s_backend/spark/jars/k8s-backend-bridge.jar"
    assert seen["cli"][:2] == ["/usr/local/bin/k8s-backend", 0], seen["cli"]


def test_a_pod_with_the_driver_rbac_service_account_reaches_the_api_in_cluster(
    node_cluster: LocalCluster, driver_image: str
) -> None:
    apply_driver_rbac(node_cluster)
    container = {"name": "driver", "image": driver_image, "imagePullPolicy": "Never",
                 "args": ["python3", "-c", IN_CLUSTER]}  # fmt: skip
    spec = {"serviceAccountName": "spark-driver", "containers": [container]}
    seen = last_json(run_to_end(node_cluster, "in-cluster", spec))
    service = node_cluster.api().get(SERVICES, "default", "kubernetes")
    cluster_ip, port = service["spec"]["clusterIP"], str(service["spec"]["ports"][0]["port"])
    assert seen["env"] == [cluster_ip, port]
    assert seen["host"] == f"https://{cluster_ip}:{port}"
    assert "service account" in seen["source"]
    assert "in-cluster" in seen["pods"]  # itself, listed through the ClusterIP with its own token
    assert seen["secrets"] == 403  # the Role grants Secrets create and deletecollection only


def apply_driver_rbac(cluster: LocalCluster) -> None:
    """``kubectl apply -n default -f examples/kubernetes/driver-rbac.yaml``, as a user would."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: it applies examples/kubernetes/driver-rbac.yaml")
    argv = [kubectl, "--kubeconfig", str(cluster.kubeconfig), "apply", "-n", "default"]
    applied = subprocess.run(
        [*argv, "-f", str(DRIVER_RBAC)], capture_output=True, text=True, timeout=60, check=False
    )
    assert applied.returncode == 0, applied.stderr


def test_cluster_mode_runs_the_driver_in_the_driver_image_with_its_service_account(
    node_cluster: LocalCluster, driver_image: str, tmp_path: Path
) -> None:
    apply_driver_rbac(node_cluster)
    api = node_cluster.api()
    service = api.get(SERVICES, "default", "kubernetes")
    cluster_ip, port = service["spec"]["clusterIP"], str(service["spec"]["ports"][0]["port"])
    # No cluster DNS here: the driver pod's template names the API server's Service, as /etc/hosts
    # entries (hostAliases), so that Spark's default master resolves to its ClusterIP.
    template = tmp_path / "driver-template.yaml"
    template.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "spec": {"hostAliases": [{"ip": cluster_ip, "hostnames": list(IN_CLUSTER_HOSTS)}]},
    }))  # fmt: skip
    pod = "cluster-mode-driver"
    spark_image = node_cluster.spark_conf()["spark.kubernetes.container.image"]
    conf = {
        "spark.kubernetes.driver.podTemplateFile": str(template),
        "spark.kubernetes.container.image": driver_image,
        "spark.kubernetes.executor.container.image": spark_image,  # executors run no k8s_backend code
        "spark.kubernetes.container.image.pullPolicy": "Never",
        "spark.kubernetes.authenticate.driver.serviceAccountName": "spark-driver",
        "spark.kubernetes.driver.pod.name": pod,
        "spark.executor.instances": "2",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        # Two cores in all on this node, shared with whatever else runs here.
        "spark.kubernetes.driver.request.cores": "100m",
        "spark.kubernetes.executor.request.cores": "100m",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
    }
    script = shutil.which("k8s-backend")
    argv = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    argv += ["submit", "--master", "pyk8s://", "--deploy-mode", "cluster"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    env = {**os.environ, "KUBECONFIG": str(node_cluster.kubeconfig)}
    done = subprocess.run(
        [*argv, str(APP)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False
    )
    driver = api.get(PODS, "default", pod)
    log = node_cluster.node.container_log(driver, "spark-kubernetes-driver")
    assert done.returncode == 0, f"{done.stderr[-3000:]}\ndriver log:\n{log[-6000:]}"
    seen = last_json(log)
    assert (seen["sum"], seen["executors"]) == (499500, 2)
    # In-cluster: Spark's default master (the Service's name, at its ClusterIP), the projected token.
    assert seen["master"] == "pyk8s://https://kubernetes.default.svc"
    assert seen["kubernetes_service"] == [cluster_ip, port]
    # (The application's own client, from the in-cluster master, takes the Service's variables; the
    # backend's went by the name: without the template's hostAliases it failed to resolve it.)
    assert seen["client_host"] == f"https://{cluster_ip}:{port}"
    assert "service account" in seen["client_source"]
    assert seen["user"] == "system:serviceaccount:default:spark-driver"
    assert driver["spec"]["serviceAccountName"] == "spark-driver"
    assert driver["status"]["phase"] == "Succeeded"
    app_id = driver["metadata"]["labels"]["spark-app-selector"]
    selector = f"spark-role=executor,spark-app-selector={app_id}"
    assert node_cluster.wait_until(lambda: not api.list(PODS, "default", label_selector=selector).items, 120)
    api.delete(PODS, "default", pod)


CONNECT = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3) as s:
        print(s.recv(16).decode())
except OSError as error:
    print(type(error).__name__)
"""


def connect_from(namespace: str, host: str, port: int) -> str:
    """What a connection from network namespace ``namespace`` to ``host:port`` reads (or its error)."""
    argv = ["ip", "netns", "exec", namespace, sys.executable, "-c", CONNECT, host, str(port)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def test_the_service_proxy_reaches_one_loopback_port_from_its_bridge_only_and_goes_with_it() -> None:
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("needs root and iptables")
    suffix = secrets.token_hex(3)
    network, namespace = host.pick_network(suffix), f"k8sb-test-{suffix}"
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:  # "api" to every connection, until the listener is closed
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                with connection:
                    connection.sendall(b"api")

    serving = threading.Thread(target=serve, daemon=True)
    host.create_bridge(network)
    # As on a node: what the "pod" sends anywhere but its bridge (10.0.0.1 before the DNAT) is dropped.
    forward_rule = host.keep_pod_traffic_here(network)
    try:
        veth, peer = f"vt{suffix}", f"vp{suffix}"
        gateway, prefix = network.gateway, network.subnet.split("/")[1]
        pod_ip = network.gateway.rsplit(".", 1)[0] + ".2"
        for argv in (
            ["ip", "netns", "add", namespace],
            ["ip", "link", "add", veth, "type", "veth", "peer", "name", peer],
            ["ip", "link", "set", peer, "netns", namespace],
            ["ip", "link", "set", veth, "master", network.bridge, "up"],
            ["ip", "-n", namespace, "addr", "add", f"{pod_ip}/{prefix}", "dev", peer],
            ["ip", "-n", namespace, "link", "set", peer, "up"],
            ["ip", "-n", namespace, "route", "add", "10.0.0.0/24", "via", gateway],
        ):
            host.run(argv)
        serving.start()
        assert connect_from(namespace, "10.0.0.1", 443) != "api"  # nothing before
        service_proxy.expose_api_server(network.bridge, "10.0.0.1", 443, port)
        assert connect_from(namespace, "10.0.0.1", 443) == "api"
        assert connect_from(namespace, "10.0.0.1", port) != "api"  # only the Service's port
        assert service_proxy.remove(network.bridge) == []
        rules = host.run(["iptables-save"]).stdout
        assert service_proxy.chain_name(network.bridge) not in rules
        assert f"{network.bridge}: the kubernetes Service" not in rules  # the jumps' comment
        assert connect_from(namespace, "10.0.0.1", 443) != "api"
    finally:
        service_proxy.remove(network.bridge)
        host.remove_rule(forward_rule)
        host.run(["ip", "netns", "del", namespace], check=False)
        host.delete_bridge(network.bridge)
        listener.close()
