"""``k8s-backend submit`` on a real control plane (``LocalCluster(control_plane="kubernetes")``).

- client mode, reaching the cluster through its kubeconfig alone (``KUBECONFIG`` and ``--master pyk8s://``);
- cluster mode: the driver pod runs as its ServiceAccount, as it would in a cluster. The kubelet mounts
  the projected service-account token and gives the process the ``kubernetes`` Service's variables; the
  driver uses Spark's default master (``https://kubernetes.default.svc``) with that token, and only the
  Role bound to its account (the permissions of examples/kubernetes/driver-rbac.yaml) lets it create
  its executors. The application asks the API server who it is (a SelfSubjectReview).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.activity import executor_activity
from k8s_backend.kube.leases import REGISTERED_EXECUTORS_ANNOTATION, REGISTERED_EXECUTORS_AS_OF_ANNOTATION
from k8s_backend.kube.port import EVENTS, PODS, Resource
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]

APP = Path(__file__).with_name("apps") / "whoami_job.py"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ACCOUNT = "spark-driver"
SERVICE_ACCOUNTS = Resource("ServiceAccount", "serviceaccounts")
ROLES = Resource("Role", "roles", group="rbac.authorization.k8s.io")
ROLE_BINDINGS = Resource("RoleBinding", "rolebindings", group="rbac.authorization.k8s.io")
# What examples/kubernetes/driver-rbac.yaml grants (the calls the backend makes, and a client-mode
# driver's heartbeat Lease); the test keeps its own copy so that it does not depend on that file.
DRIVER_RULES = [
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["create", "get", "list", "watch", "patch", "delete", "deletecollection"],
    },
    {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["create", "deletecollection"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["deletecollection"]},
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims"],
        "verbs": ["create", "get", "list", "deletecollection"],
    },
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["create", "get", "patch", "delete"],
    },
]


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    with LocalCluster(
        control_plane="kubernetes", nodes=[Node.of("node-1", cpu="4", memory="8Gi")], stop_grace=2.0
    ) as local:
        yield local


def submit(cluster: LocalCluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``k8s-backend submit --master pyk8s://`` with the cluster's kubeconfig as the only credentials."""
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    conf = {
        "spark.kubernetes.container.image": "apache/spark:4.3.0",
        "spark.executor.instances": "2",
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
    }
    argv = [*command, "submit", "--master", "pyk8s://"]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run(
        [*argv, *args, str(APP)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )


def report(text: str) -> dict[str, Any]:
    """The application's JSON line."""
    lines = [line for line in text.splitlines() if line.startswith('{"sum"')]
    assert lines, text[-5000:]
    return dict(json.loads(lines[-1]))


def executor_pods(cluster: LocalCluster, app_id: str | None = None) -> list[dict[str, Any]]:
    selector = "spark-role=executor" + (f",spark-app-selector={app_id}" if app_id else "")
    return cluster.api().list(PODS, "default", label_selector=selector).items


def scheduled_by(cluster: LocalCluster) -> dict[str, str]:
    """Pod name -> the component that reported its ``Scheduled`` event, for every pod so far."""
    events = cluster.api().list(EVENTS, "default", field_selector="reason=Scheduled").items
    return {
        e["involvedObject"]["name"]: e.get("reportingComponent")
        or (e.get("source") or {}).get("component", "")
        for e in events
    }


def test_client_mode_with_the_clusters_kubeconfig(cluster: LocalCluster, tmp_path: Path) -> None:
    done = submit(
        cluster,
        tmp_path,
        "--deploy-mode",
        "client",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.driver.bindAddress=127.0.0.1",
    )
    assert done.returncode == 0, done.stderr[-6000:]
    seen = report(done.stdout)
    assert (seen["sum"], seen["executors"]) == (499500, 2)
    assert seen["master"] == "pyk8s://"
    assert seen["client_host"] == cluster.url  # from the kubeconfig, with its admin token
    assert seen["user"] == "k8s-backend-admin"
    # The executors were bound by kube-scheduler, and deleted when the application stopped.
    assert cluster.wait_until(lambda: executor_pods(cluster) == [], 60), executor_pods(cluster)
    assert cluster.wait_until(lambda: cluster.kubelet.processes() == [], 60)
    scheduled = scheduled_by(cluster)
    executors = [name for name in scheduled if "-exec-" in name]
    assert len(executors) >= 2
    assert {scheduled[name] for name in executors} == {"default-scheduler"}


def grant_driver_role(cluster: LocalCluster) -> None:
    api = cluster.api()
    api.create(SERVICE_ACCOUNTS, "default", {"metadata": {"name": ACCOUNT}})
    api.create(ROLES, "default", {"metadata": {"name": ACCOUNT}, "rules": DRIVER_RULES})
    api.create(
        ROLE_BINDINGS,
        "default",
        {
            "metadata": {"name": ACCOUNT},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT}],
        },
    )


def driver_log(cluster: LocalCluster, pod: str) -> str:
    logs = sorted(cluster.work_dir.glob(f"pods/default_{pod}_*/logs/spark-kubernetes-driver.log"))
    assert logs, f"no log of the driver pod {pod} under {cluster.work_dir}"
    return logs[-1].read_text(errors="replace")


def test_cluster_mode_driver_runs_with_its_service_account_token(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    grant_driver_role(cluster)
    pod = "whoami-driver"
    done = submit(
        cluster,
        tmp_path,
        "--deploy-mode",
        "cluster",
        "--conf",
        f"spark.kubernetes.authenticate.driver.serviceAccountName={ACCOUNT}",
        "--conf",
        f"spark.kubernetes.driver.pod.name={pod}",
    )
    log = driver_log(cluster, pod)
    assert done.returncode == 0, f"{done.stderr[-3000:]}\ndriver log:\n{log[-5000:]}"
    seen = report(log)
    assert (seen["sum"], seen["executors"]) == (499500, 2)

    # The driver reached the API server as a driver pod does: Spark's default master, the kubernetes
    # Service's address from its environment, and the token the kubelet projected for its account.
    assert seen["master"] == "pyk8s://https://kubernetes.default.svc"
    port = cluster.url.rsplit(":", 1)[1]
    assert seen["kubernetes_service"] == ["127.0.0.1", port]
    assert seen["client_host"] == f"https://127.0.0.1:{port}"
    assert "service account" in seen["client_source"]
    assert {"token", "ca.crt", "namespace"} <= set(seen["service_account_files"])
    assert seen["user"] == f"system:serviceaccount:default:{ACCOUNT}"

    # No other credentials went into the pod: no token Secret, and its account is the driver's.
    driver = cluster.api().get(PODS, "default", pod)
    assert driver["spec"]["serviceAccountName"] == ACCOUNT
    volumes = {v["name"]: v for v in driver["spec"]["volumes"]}
    assert not [v for v in volumes.values() if "secret" in v], volumes
    assert driver["status"]["phase"] == "Succeeded"
    assert scheduled_by(cluster)[pod] == "default-scheduler"
    # Its Role let it write its registered executors on its own pod (for `k8s-backend status`).
    annotations = driver["metadata"].get("annotations") or {}
    assert isinstance(json.loads(annotations[REGISTERED_EXECUTORS_ANNOTATION]), dict), annotations
    assert REGISTERED_EXECUTORS_AS_OF_ANNOTATION in annotations
    activity = executor_activity(driver)  # written in the same patches, for `status --timeline`
    assert activity is not None and activity.target and activity.started_at is not None, annotations
    assert "Could not write the registered executors" not in log
    # Its executors were created by the driver (owned by its pod) and deleted when it stopped.
    app_id = driver["metadata"]["labels"]["spark-app-selector"]
    assert cluster.wait_until(lambda: executor_pods(cluster, app_id) == [], 60)
    cluster.api().delete(PODS, "default", pod)
