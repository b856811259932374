"""Parity on a real node (kubelet, containerd, runc), issue 21 section 4:

- Spark 4.3's own ``k8s://`` backend (its KubernetesClusterSchedulerBackend in client mode, the driver on
  this machine at the bridge's gateway, fabric8 with the control plane's CA and token) runs the node
  tier's job on the same node with the same Spark image: the right answer, every executor registered,
  their pods' containers run by containerd, nothing left after ``spark.stop()``;
- an executor pod template through :func:`k8s_backend.spark.session`: ``runAsUser``/``fsGroup`` and an
  emptyDir from the template, and the executor service account, seen from inside the executors (the
  uid without a passwd entry, the fsGroup-owned volumes, the account's projected token) and in the pods.

Each driver runs in a fresh Python process (its own JVM): node_parity_support.py.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.port import CONFIG_MAPS, PODS
from k8s_backend.local.namespaces import SERVICE_ACCOUNTS
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

SUPPORT = Path(__file__).with_name("node_parity_support.py")
ANSWER = sum(x * x for x in range(10_000))
WORK_DIR = "/opt/spark/work-dir"
SETGID = 0o2000


def run_driver(
    backend: str, cluster: LocalCluster, tmp_path: Path, conf: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run node_parity_support.py's job with ``backend`` on the cluster; its report."""
    master = cluster.spark_k8s_master if backend == "spark" else cluster.master
    info = {
        "master": master, "conf": {**cluster.spark_conf(), **(conf or {})},
        "url": cluster.url, "token": cluster.token, "ca": str(cluster.ca_cert),
    }  # fmt: skip
    cluster_file = tmp_path / f"{backend}-cluster.json"
    cluster_file.write_text(json.dumps(info))
    out = tmp_path / f"{backend}-out.json"
    # The executors' Python workers run the image's python3 (3.11, as this driver's: PySpark requires it).
    env = {**os.environ, "PYSPARK_PYTHON": "python3", "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("KUBECONFIG", None)  # the cluster's own credentials only
    proc = subprocess.run(
        [sys.executable, str(SUPPORT), backend, str(out), str(cluster_file)], env=env, capture_output=True,
        text=True, timeout=600, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-6000:]
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["stopped"]
    return report


def assert_job_ran_in_containers(cluster: LocalCluster, report: dict[str, Any]) -> None:
    """The answer, both executors registered at their pod IPs, each pod's container run by containerd
    from the node's Spark image, and every task's worker in one of those pods."""
    assert report["answer"] == ANSWER
    assert report["registered"] == 2
    subnet = ipaddress.IPv4Network(cluster.node.network.subnet)  # type: ignore[union-attr]
    gateway = cluster.node.gateway
    hosts = report["executor_hosts"]
    assert len(hosts) == 3 and hosts.count(gateway) == 1, hosts  # the driver, at the bridge's gateway
    pods = report["pods"]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    assert sorted(p["status"]["podIP"] for p in pods) == sorted(h for h in hosts if h != gateway)
    image = cluster.spark_conf()["spark.kubernetes.container.image"]
    for pod in pods:
        assert ipaddress.IPv4Address(pod["status"]["podIP"]) in subnet
        assert pod["metadata"]["labels"]["spark-app-selector"] == report["app"]
        (container,) = pod["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == (image, "Never")
        assert container["args"] == ["executor"]
        (status,) = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        assert "running" in status["state"], status
    assert {w["pod"] for w in report["workers"]} <= {p["metadata"]["name"] for p in pods}
    for worker in report["workers"]:
        assert worker["python"].rsplit(".", 1)[0] == report["driver_python"].rsplit(".", 1)[0]
        assert worker["cwd"] == WORK_DIR


def assert_nothing_left(cluster: LocalCluster, app: str) -> None:
    """No executor pod and no executor ConfigMap of the application remain."""
    api = cluster.api()
    selector = f"spark-app-selector={app}"

    def gone() -> bool:
        kinds = (PODS, CONFIG_MAPS)
        return not any(api.list(kind, "default", label_selector=selector).items for kind in kinds)

    assert cluster.wait_until(gone, timeout=120), [
        p["metadata"]["name"] for p in api.list(PODS, "default", label_selector=selector).items
    ]


def test_sparks_own_k8s_backend_runs_the_same_job_on_the_node(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    report = run_driver("spark", node_cluster, tmp_path)
    assert_job_ran_in_containers(node_cluster, report)
    for pod in report["pods"]:
        # Spark's own executor pod: its entrypoint contract, the pod IP from the downward API.
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["SPARK_EXECUTOR_POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert env["SPARK_DRIVER_URL"]["value"].startswith(
            f"spark://CoarseGrainedScheduler@{node_cluster.node.gateway}:"
        )
    for worker in report["workers"]:
        assert (worker["uid"], worker["user"]) == (185, "spark")  # the image's user
    assert_nothing_left(node_cluster, report["app"])


EXECUTOR_ACCOUNT = "spark-exec"
RUN_AS_USER, FS_GROUP = 1000, 2000
TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"labels": {"from-template": "yes"}},
    "spec": {
        "securityContext": {"runAsUser": RUN_AS_USER, "fsGroup": FS_GROUP},
        "containers": [
            {"name": "from-template", "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
        ],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
    },
}


def assert_fs_group_owned(owner: list[int] | None, what: str) -> None:
    """A volume the kubelet gave to the fsGroup: that group, group-writable, set-gid."""
    assert owner is not None, f"{what} is missing"
    _uid, gid, mode = owner
    assert gid == FS_GROUP and mode & 0o070 == 0o070 and mode & SETGID, (what, owner, oct(mode))


def test_an_executor_pod_template_with_run_as_user_fs_group_and_a_service_account(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    api = node_cluster.api()
    api.create(SERVICE_ACCOUNTS, "default", {"metadata": {"name": EXECUTOR_ACCOUNT}})
    template = tmp_path / "executor-template.yaml"
    template.write_text(json.dumps(TEMPLATE))  # JSON is YAML
    report = run_driver("k8s_backend", node_cluster, tmp_path, {
        "spark.kubernetes.executor.podTemplateFile": str(template),
        "spark.kubernetes.authenticate.executor.serviceAccountName": EXECUTOR_ACCOUNT,
    })  # fmt: skip
    assert_job_ran_in_containers(node_cluster, report)

    # The pods: the template's security context, label and volume kept, the executor account set.
    for pod in report["pods"]:
        spec = pod["spec"]
        assert spec["securityContext"] == {"runAsUser": RUN_AS_USER, "fsGroup": FS_GROUP}
        assert spec["serviceAccountName"] == EXECUTOR_ACCOUNT
        assert pod["metadata"]["labels"]["from-template"] == "yes"
        assert {"name": "scratch", "emptyDir": {}} in spec["volumes"]
        assert {"name": "scratch", "mountPath": "/scratch"} in spec["containers"][0]["volumeMounts"]

    # Inside: the uid has no passwd entry in the image, so the entrypoint faked one (libnss-wrapper); the
    # fsGroup is a supplementary group, and owns the template's emptyDir and Spark's local dirs; the
    # executor account's token is mounted.
    assert len(report["workers"]) >= 1
    pods = {pod["metadata"]["name"]: pod for pod in report["pods"]}
    for worker in report["workers"]:
        assert worker["uid"] == RUN_AS_USER
        assert FS_GROUP in worker["groups"], worker
        assert worker["user"] == "spark", worker
        assert_fs_group_owned(worker["scratch"], "/scratch")
        assert worker["scratch_file"][:2] == [RUN_AS_USER, FS_GROUP], worker  # written through set-gid
        # Spark's local dir (an emptyDir) is the fsGroup's; what the executor makes in it inherits the group.
        mounts = pods[worker["pod"]]["spec"]["containers"][0]["volumeMounts"]
        (local_dir,) = [m["mountPath"] for m in mounts if m["name"].startswith("spark-local-dir-")]
        assert_fs_group_owned(worker["mounts"].get(local_dir), local_dir)
        assert worker["local_dirs"], worker
        for path, owner in worker["local_dirs"].items():
            assert path.startswith(local_dir + "/") and owner[:2] == [RUN_AS_USER, FS_GROUP], worker
        assert worker["token_subject"] == f"system:serviceaccount:default:{EXECUTOR_ACCOUNT}"
        assert worker["sa_namespace"] == "default"
    assert_nothing_left(node_cluster, report["app"])
