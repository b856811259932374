"""LocalCluster(control_plane="kubernetes"): a real control plane with the process kubelet as its node
agent. The backend runs exactly N executors on it (no executor processes), stop() leaves no pod, and
leaving the cluster leaves no process of the control plane or the kubelet."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backend_real_support import until
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import PODS, KubernetesApi
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.local.kubelet.processes import process_table
from k8s_backend.local.kubelet.remote import NODES
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

APP = "spark-real-local"
EXECUTORS = 6


def pids_of(paths: list[str]) -> list[int]:
    """This process's children running one of ``paths``: another test run on the machine (a second clone
    at once) may run the same cached binaries, and its processes are not ours to count."""
    found = []
    for info in process_table():
        try:
            if os.readlink(f"/proc/{info.pid}/exe") in paths and _parent(info.pid) == os.getpid():
                found.append(info.pid)
        except OSError:
            continue
    return found


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        # The command name (field 2) is in parentheses and may hold spaces: split after it.
        return int(handle.read().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    # binaries (tests/real/conftest.py) skips when nothing is cached and Go is missing.
    nodes = [Node.of("node-1", cpu="100", memory="100Gi"), Node.of("node-2", cpu="100", memory="100Gi")]
    with LocalCluster(control_plane="kubernetes", run_processes=False, nodes=nodes) as local:
        yield local


def executors(api: KubernetesApi) -> list[dict[str, Any]]:
    return api.list(PODS, "default", label_selector=f"spark-app-selector={APP}").items


def test_the_cluster_is_a_real_one_reached_over_https(cluster: LocalCluster) -> None:
    assert cluster.url.startswith("https://127.0.0.1:")
    nodes = {n["metadata"]["name"] for n in cluster.api().list(NODES, None).items}
    assert nodes == {"node-1", "node-2"}
    with pytest.raises(RuntimeError, match="no fake"):
        _ = cluster.fake
    # The kubeconfig is a Path that the official client's loader also takes as is.
    api_client = k8s_config.new_client_from_config(cluster.kubeconfig)  # type: ignore[no-untyped-call]
    try:
        version = k8s_client.VersionApi(api_client).get_code()
        assert version.git_version == "v1.37.2"
    finally:
        api_client.close()
    assert "token" in cluster.kubeconfig.read_text()


def test_the_backend_runs_exactly_n_executors_and_stop_leaves_nothing(cluster: LocalCluster) -> None:
    props = {
        "spark.app.name": "real-local",
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.executor.podNamePrefix": "real-local",
        "spark.executor.instances": str(EXECUTORS),
        "spark.executor.memory": "512m",
        "spark.kubernetes.allocation.batch.size": "4",
        "spark.kubernetes.allocation.batch.delay": "200ms",
        "spark.kubernetes.executor.eventProcessingInterval": "200ms",
    }
    backend = KubernetesClusterSchedulerBackend.create(
        props, app_id=APP, driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078", api=cluster.api()
    )
    api = cluster.api()
    backend.start()
    try:

        def all_running() -> bool:
            pods = executors(api)
            return len(pods) == EXECUTORS and all(p["status"].get("phase") == "Running" for p in pods)

        until(all_running, f"{EXECUTORS} executors Running")
        pods = executors(api)
        assert {p["spec"]["nodeName"] for p in pods} <= {"node-1", "node-2"}  # bound by kube-scheduler
        assert backend.status()["pods"]  # the backend's own view agrees
    finally:
        backend.stop()
    until(lambda: executors(api) == [], "executor pods removed after stop()")


def test_leaving_the_cluster_leaves_no_process(binaries: ControlPlaneBinaries) -> None:
    paths = [
        str(binaries.etcd),
        str(binaries.kube_apiserver),
        str(binaries.kube_scheduler),
        str(binaries.kube_controller_manager),
    ]
    before = set(pids_of(paths))
    with LocalCluster(control_plane="kubernetes", nodes=[Node.of("solo", cpu="4", memory="4Gi")]) as local:
        started = set(pids_of(paths)) - before
        assert len(started) == 4
        api = local.api()
        code = "import time; time.sleep(600)"
        body = {
            "metadata": {"name": "lingers"},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {"name": "main", "image": "python:3", "command": [sys.executable, "-c", code]}
                ],
            },
        }
        api.create(PODS, "default", body)
        until(lambda: local.pod_phase("lingers") == "Running", "pod lingers Running")
        handles = local.kubelet.processes()
        assert len(handles) == 1
    until(lambda: not (set(pids_of(paths)) & started), "control-plane processes gone", timeout=60)
    assert not any(os.path.exists(f"/proc/{h.pid}") and _alive(h.pid) for h in handles)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


def test_the_local_command_runs_a_real_control_plane(tmp_path: Path) -> None:
    """`k8s-backend local --control-plane kubernetes`: its kubeconfig works with kubectl and with the
    official client's loaders; .url is https, .token the kubeconfig's, .api() reaches it."""
    import argparse
    import io
    import threading

    import yaml

    from k8s_backend.cli.local import configure_parser, run_local

    parser = argparse.ArgumentParser()
    configure_parser(parser)
    args = parser.parse_args(
        ["--control-plane", "kubernetes", "--no-processes", "--nodes", "2", "--work-dir", str(tmp_path)]
    )
    out, ready, stop = io.StringIO(), threading.Event(), threading.Event()
    runner = threading.Thread(
        target=run_local, args=(args,), kwargs={"out": out, "ready": ready, "stop": stop}
    )
    runner.start()
    try:
        assert ready.wait(300), out.getvalue()
        kubeconfig = tmp_path / "kubeconfig"
        document = yaml.safe_load(kubeconfig.read_text())
        server = document["clusters"][0]["cluster"]["server"]
        token = document["users"][0]["user"]["token"]
        assert server.startswith("https://127.0.0.1:")
        assert f"API server:  {server}\n  served by:   a real control plane" in out.getvalue()
        assert f"spark.kubernetes.authenticate.oauthToken={token}" in out.getvalue()
        # The official client's loaders, from the file alone.
        configuration = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
        with k8s_client.ApiClient(configuration) as api_client:
            nodes = k8s_client.CoreV1Api(api_client).list_node().items
            assert sorted(n.metadata.name for n in nodes) == ["node-1", "node-2"]
            assert k8s_client.VersionApi(api_client).get_code().git_version == "v1.37.2"
        kubectl = shutil.which("kubectl")
        if kubectl is not None:  # kubectl reads the same file (CA data and token)
            done = subprocess.run(
                [kubectl, "--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "name"],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["node/node-1", "node/node-2"]
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive()


def test_a_namespace_asked_for_is_made_with_its_service_account(cluster: LocalCluster) -> None:
    # A real server refuses a pod in a missing namespace (404) or before the namespace's default
    # ServiceAccount exists (403); the local cluster makes both before handing out the namespace.
    conf = cluster.spark_conf(namespace="team-real")
    api = cluster.api(conf["spark.kubernetes.namespace"])
    pod = {"metadata": {"name": "ns-probe"}, "spec": {"containers": [{"name": "c", "image": "python:3.11"}]}}
    created = api.create(PODS, "team-real", pod)
    assert created["spec"]["serviceAccountName"] == "default"
