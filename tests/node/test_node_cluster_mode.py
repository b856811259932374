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
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.port import PODS, SERVICES
from k8s_backend.local.node import NodeBuilder
from k8s_backend.local.node.images import ImageBuilder
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
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
    image = ImageBuilder().driver()
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
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: it applies examples/kubernetes/driver-rbac.yaml")
    argv = [kubectl, "--kubeconfig", str(node_cluster.kubeconfig), "apply", "-n", "default"]
    applied = subprocess.run(
        [*argv, "-f", str(DRIVER_RBAC)], capture_output=True, text=True, timeout=60, check=False
    )
    assert applied.returncode == 0, applied.stderr
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
