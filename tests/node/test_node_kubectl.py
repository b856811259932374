"""``kubectl logs`` and ``kubectl exec`` on the real node: the API server reaches the kubelet at the node's
InternalIP with a client certificate that the kubelet's webhook authorizer allows (system:kubelet-api-admin),
and checks the kubelet's serving certificate against the cluster's CA. Anybody else gets 401 from it.
"""

from __future__ import annotations

import http.client
import os
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.port import NODES, PODS
from k8s_backend.local.node import NodeBuilder
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(600)]

POD = "kubectl-talker"
LINES = [f"talker line {i}" for i in range(1, 4)]


@pytest.fixture(scope="module")
def talker(node_cluster: LocalCluster) -> Iterator[str]:
    """A running pod of the Spark image that printed :data:`LINES` and stays up."""
    api = node_cluster.api()
    script = "".join(f"echo '{line}'; " for line in LINES) + "exec sleep 3600"
    container = {
        "name": "talk",
        "image": node_cluster.spark_conf()["spark.kubernetes.container.image"],
        "imagePullPolicy": "Never",
        "command": ["/bin/sh", "-c", script],
    }
    spec = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [container]}
    api.create(PODS, "default", {"metadata": {"name": POD}, "spec": spec})

    def running() -> bool:
        statuses = (api.get(PODS, "default", POD).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and all((s.get("state") or {}).get("running") for s in statuses)

    try:
        assert node_cluster.wait_until(running, timeout=180), api.get(PODS, "default", POD)
        yield POD
    finally:
        api.delete(PODS, "default", POD)
        assert node_cluster.wait_until(lambda: not api.list(PODS, "default").items, timeout=120)


def kubectl(cluster: LocalCluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The kubectl built with the node (the control plane's version), not one a user may have on PATH.
    binary = str(NodeBuilder().binaries.path("kubectl"))
    # Only this cluster's kubeconfig, and no kubectl cache of the user's.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    argv = [binary, "--kubeconfig", str(cluster.kubeconfig), "-n", "default", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_kubectl_logs_prints_what_the_container_wrote(
    node_cluster: LocalCluster, talker: str, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}

    def logged() -> bool:  # the kubelet's log file may trail the container's first lines a moment
        seen["proc"] = kubectl(node_cluster, tmp_path, "logs", talker)
        return seen["proc"].returncode == 0 and seen["proc"].stdout.splitlines() == LINES

    assert node_cluster.wait_until(logged, timeout=60), (seen["proc"].stdout, seen["proc"].stderr)


def test_kubectl_exec_runs_as_the_images_user(
    node_cluster: LocalCluster, talker: str, tmp_path: Path
) -> None:
    proc = kubectl(node_cluster, tmp_path, "exec", talker, "--", "id", "-u")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "185"
    proc = kubectl(node_cluster, tmp_path, "exec", talker, "--", "sh", "-c", "pwd; exit 3")
    assert proc.returncode == 3, proc.stderr  # the command's exit code comes back through the stream
    assert proc.stdout.strip() == "/opt/spark/work-dir"


def test_the_adapters_pod_log_reads_the_same_lines(node_cluster: LocalCluster, talker: str) -> None:
    api = node_cluster.api()
    seen: list[str] = []

    def logged() -> bool:
        seen[:] = api.pod_log("default", talker, container="talk", follow=False)
        return seen == LINES

    assert node_cluster.wait_until(logged, timeout=60), seen


def test_the_kubelet_serves_a_certificate_of_the_cluster_ca_and_refuses_anonymous_requests(
    node_cluster: LocalCluster,
) -> None:
    node = node_cluster.api().get(NODES, None, node_cluster.node.name)
    status = node["status"]
    address = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
    port = status["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert address == node_cluster.node.gateway
    ca = node_cluster.ca_cert
    assert ca is not None
    # Checked as the API server checks it: against the cluster's CA, for the address it dials.
    verified = ssl.create_default_context(cafile=str(ca))
    assert get(address, port, "/healthz", verified) == 401
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE  # curl -k: no certificate, no checks
    for path in ("/pods", f"/containerLogs/default/{POD}/talk", "/runningpods/"):
        assert get(address, port, path, unverified) == 401, path


def get(address: str, port: int, path: str, context: ssl.SSLContext) -> int:
    connection = http.client.HTTPSConnection(address, port, context=context, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()
