"""A PySpark job through ``k8s_backend.spark.session`` with executors in containers on a real node:
the right answer, every executor registered, the executors' Python workers running in the Spark image
(uid 185, /opt/spark/work-dir, Debian's python3) with the pod IP from the downward API as their host,
nothing left after ``spark.stop()``; and nothing left on this machine after the cluster stops.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from node_env import node_missing, wait_for

from k8s_backend.kube.port import CONFIG_MAPS, PODS, SECRETS
from k8s_backend.local.node import host
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

SUPPORT = Path(__file__).with_name("node_support.py")
OWNER = Path(__file__).with_name("node_owner.py")


def test_a_pyspark_job_runs_its_executors_in_containers(node_cluster: LocalCluster, tmp_path: Path) -> None:
    cluster_file = tmp_path / "cluster.json"
    cluster_file.write_text(json.dumps({"master": node_cluster.master, "conf": node_cluster.spark_conf()}))
    out = tmp_path / "out.json"
    # The executors' Python workers run the image's python3 (3.11, as this driver's: PySpark requires it).
    env = {**os.environ, "PYSPARK_PYTHON": "python3", "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("KUBECONFIG", None)
    proc = subprocess.run(
        [sys.executable, str(SUPPORT), str(out), str(cluster_file)], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["answer"] == sum(x * x for x in range(10_000))
    assert report["registered"] == 2
    subnet = ipaddress.IPv4Network(node_cluster.node.network.subnet)  # type: ignore[union-attr]
    gateway = node_cluster.node.gateway
    # The driver is at the bridge's gateway; each executor's host is its pod IP on the bridge
    # (SPARK_EXECUTOR_POD_IP from status.podIP).
    hosts = report["executor_hosts"]
    assert len(hosts) == 3 and hosts.count(gateway) == 1, hosts
    pod_hosts = [h for h in hosts if h != gateway]
    assert all(ipaddress.IPv4Address(h) in subnet for h in pod_hosts), hosts
    for _hostname, python, uid, cwd in report["workers"]:
        assert python.rsplit(".", 1)[0] == report["driver_python"].rsplit(".", 1)[0]
        assert uid == 185
        assert cwd == "/opt/spark/work-dir"
    api = node_cluster.api()
    assert node_cluster.wait_until(lambda: not api.list(PODS, "default").items, timeout=120)


def run_pod(cluster: LocalCluster, name: str, spec: dict[str, Any], timeout: float = 180) -> dict[str, Any]:
    """Create a pod of the Spark image and wait until its container terminated; the pod."""
    api = cluster.api()
    image = cluster.spark_conf()["spark.kubernetes.container.image"]
    for container in spec["containers"]:
        container.setdefault("image", image)
        container.setdefault("imagePullPolicy", "Never")
    api.create(PODS, "default", {"metadata": {"name": name}, "spec": {"restartPolicy": "Never", **spec}})

    def terminated() -> bool:
        statuses = (api.get(PODS, "default", name).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and all((s.get("state") or {}).get("terminated") for s in statuses)

    assert cluster.wait_until(terminated, timeout=timeout), api.get(PODS, "default", name)
    return api.get(PODS, "default", name)


def terminated_state(pod: dict[str, Any]) -> dict[str, Any]:
    return dict(pod["status"]["containerStatuses"][0]["state"]["terminated"])


def test_a_container_over_its_memory_limit_is_oom_killed_by_the_kernel(node_cluster: LocalCluster) -> None:
    hog = "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096])"
    pod = run_pod(node_cluster, "oom", {"containers": [{
        "name": "main", "args": ["python3", "-c", hog],
        "resources": {"limits": {"memory": "64Mi", "cpu": "100m"}},
    }]})  # fmt: skip
    state = terminated_state(pod)
    assert (state["reason"], state["exitCode"]) == ("OOMKilled", 137)
    # The kubelet writes the phase in a later status update than the container's state.
    assert node_cluster.wait_until(lambda: node_cluster.pod_phase("oom") == "Failed", timeout=60)


def test_the_downward_api_volumes_user_and_work_dir_reach_the_container(node_cluster: LocalCluster) -> None:
    api = node_cluster.api()
    api.create(CONFIG_MAPS, "default", {"metadata": {"name": "conf"}, "data": {"a.txt": "from-configmap"}})
    api.create(SECRETS, "default", {"metadata": {"name": "sec"}, "stringData": {"s.txt": "from-secret"}})
    script = (
        'echo "ip=$POD_IP uid=$(id -u) pwd=$(pwd)"; cat /etc/c/a.txt; echo; cat /etc/s/s.txt; echo; '
        "echo scratch > /scratch/x && cat /scratch/x; "
        "grep -E ' /(scratch|tmpfs) ' /proc/mounts | cut -d' ' -f2,3"
    )
    volumes = {
        "c": ("/etc/c", {"configMap": {"name": "conf"}}),
        "s": ("/etc/s", {"secret": {"secretName": "sec"}}),
        "scratch": ("/scratch", {"emptyDir": {}}),
        "mem": ("/tmpfs", {"emptyDir": {"medium": "Memory"}}),
    }
    container = {
        "name": "main",
        "args": ["bash", "-c", script],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [{"name": name, "mountPath": path} for name, (path, _) in volumes.items()],
    }
    pod = run_pod(node_cluster, "views", {
        "containers": [container],
        "volumes": [{"name": name, **source} for name, (_, source) in volumes.items()],
    })  # fmt: skip
    assert terminated_state(pod)["exitCode"] == 0
    log = node_cluster.node.container_log(pod, "main")
    lines = log.splitlines()
    assert lines[0] == f"ip={pod['status']['podIP']} uid=185 pwd=/opt/spark/work-dir", log
    assert lines[1:4] == ["from-configmap", "from-secret", "scratch"], log
    mounts = dict(line.split() for line in lines[4:])
    assert mounts["/tmpfs"] == "tmpfs" and mounts["/scratch"] != "tmpfs", log


FAKE_JAVA = """#!/bin/bash
# Stands in for the JVM: records how the entrypoint started it, then waits for SIGTERM.
out=/record/java.txt
{ echo "pid1=$(tr '\\0' ' ' < /proc/1/cmdline)"; echo "uid=$(id -u)"; printf 'arg=%s\\n' "$@"; } > "$out"
trap 'echo "TERM" >> "$out"; exit 0' TERM
trap 'echo "PWR" >> "$out"; exit 0' PWR
echo started >> "$out"
while :; do sleep 0.1; done
"""


def test_the_executor_branch_runs_the_contracts_java_under_tini_which_passes_sigterm(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    record = tmp_path / "record"
    record.mkdir()
    record.chmod(0o777)  # the container runs as uid 185
    api = node_cluster.api()
    api.create(CONFIG_MAPS, "default", {"metadata": {"name": "fake-java"}, "data": {"java": FAKE_JAVA}})
    env = {
        "JAVA_HOME": "/fake", "SPARK_EXECUTOR_MEMORY": "512m", "SPARK_DRIVER_URL": "spark://d:1",
        "SPARK_EXECUTOR_ID": "7", "SPARK_EXECUTOR_CORES": "1", "SPARK_APPLICATION_ID": "app-1",
        "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": "tini", "SPARK_JAVA_OPT_1": "-Db=2",
        "SPARK_JAVA_OPT_0": "-Da=1", "SPARK_EXTRA_CLASSPATH": "/extra.jar",
    }  # fmt: skip
    container = {
        "name": "main",
        "image": node_cluster.spark_conf()["spark.kubernetes.container.image"],
        "imagePullPolicy": "Never",
        "args": ["executor"],
        "env": [
            *({"name": k, "value": v} for k, v in env.items()),
            {"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "volumeMounts": [{"name": "java", "mountPath": "/fake/bin"}, {"name": "rec", "mountPath": "/record"}],
    }
    volumes = [
        {"name": "java", "configMap": {"name": "fake-java", "defaultMode": 0o755}},
        {"name": "rec", "hostPath": {"path": str(record)}},
    ]
    spec = {"containers": [container], "volumes": volumes, "terminationGracePeriodSeconds": 60}
    api.create(PODS, "default", {"metadata": {"name": "tini"}, "spec": spec})
    java = record / "java.txt"
    assert node_cluster.wait_until(lambda: java.exists() and "started" in java.read_text(), timeout=180)
    pod_ip = api.get(PODS, "default", "tini")["status"]["podIP"]
    lines = java.read_text().splitlines()
    assert lines[0].startswith("pid1=/usr/bin/tini -s -- /fake/bin/java"), lines
    assert lines[1] == "uid=185"
    args = [line.removeprefix("arg=") for line in lines if line.startswith("arg=")]
    classpath = "/opt/spark/conf::/opt/spark/jars/*:/extra.jar:/opt/spark/work-dir:"
    assert args == [
        "-Da=1", "-Db=2", "-Xms512m", "-Xmx512m", "-cp", classpath,
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "--driver-url", "spark://d:1", "--executor-id", "7", "--cores", "1", "--app-id", "app-1",
        "--hostname", pod_ip, "--resourceProfileId", "0", "--podName", "tini",
    ]  # fmt: skip
    started = time.monotonic()
    api.delete(PODS, "default", "tini")
    assert node_cluster.wait_until(lambda: node_cluster.pod_phase("tini") is None, timeout=120)
    # tini passed SIGTERM on: the stand-in exited at once, long before the 60 s grace period's SIGKILL.
    assert java.read_text().splitlines()[-1] == "TERM"
    assert time.monotonic() - started < 30


def test_the_prestop_decom_script_asks_the_executor_jvm_to_decommission(
    node_cluster: LocalCluster, tmp_path: Path
) -> None:
    record = tmp_path / "record"
    record.mkdir()
    record.chmod(0o777)
    api = node_cluster.api()
    api.create(CONFIG_MAPS, "default", {"metadata": {"name": "fake-java-2"}, "data": {"java": FAKE_JAVA}})
    container = {
        "name": "main",
        "image": node_cluster.spark_conf()["spark.kubernetes.container.image"],
        "imagePullPolicy": "Never",
        "args": ["executor"],
        "env": [{"name": "JAVA_HOME", "value": "/fake"}],
        "volumeMounts": [{"name": "java", "mountPath": "/fake/bin"}, {"name": "rec", "mountPath": "/record"}],
        # What k8s_backend's executor pods get with spark.decommission.enabled.
        "lifecycle": {"preStop": {"exec": {"command": ["/opt/decom.sh"]}}},
    }
    volumes = [
        {"name": "java", "configMap": {"name": "fake-java-2", "defaultMode": 0o755}},
        {"name": "rec", "hostPath": {"path": str(record)}},
    ]
    spec = {"containers": [container], "volumes": volumes, "terminationGracePeriodSeconds": 60}
    api.create(PODS, "default", {"metadata": {"name": "decom"}, "spec": spec})
    java = record / "java.txt"
    assert node_cluster.wait_until(lambda: java.exists() and "started" in java.read_text(), timeout=180)
    started = time.monotonic()
    api.delete(PODS, "default", "decom")
    assert node_cluster.wait_until(lambda: node_cluster.pod_phase("decom") is None, timeout=120)
    # decom.sh found the JVM and sent SIGPWR (Spark's decommission signal) before the kubelet's SIGTERM;
    # the JVM's exit ended the hook and the container, well within the grace period.
    assert java.read_text().splitlines()[-1] == "PWR", java.read_text()
    assert time.monotonic() - started < 30


def test_stopping_the_cluster_leaves_no_container_mount_cgroup_bridge_or_process(
    node_cluster: LocalCluster,
) -> None:
    node = node_cluster.node
    work_dir, bridge = node.work_dir, node.network.bridge  # type: ignore[union-attr]
    changes = host.HostChanges.load(work_dir / "host-changes.json")
    assert changes is not None and changes.cgroup_root
    node_cluster.stop()
    assert not host.mounts_under([work_dir])
    assert not host.bridge_exists(bridge)
    assert not any((h / changes.cgroup_root).exists() for h in host.cgroup_hierarchies())
    assert not work_dir.exists()
    leftovers = subprocess.run(["pgrep", "-f", str(work_dir)], capture_output=True, text=True).stdout
    assert not leftovers.strip()


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_the_owner_killed_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    why = node_missing()
    if why is not None:
        pytest.skip(why)
    info_path = tmp_path / "info.json"
    owner = subprocess.Popen([sys.executable, str(OWNER), str(info_path)], start_new_session=True)
    try:
        assert wait_for(lambda: info_path.exists() or owner.poll() is not None, 600)
        assert owner.poll() is None, "the owner exited before its pod ran"
        info = json.loads(info_path.read_text())
        assert host.mounts_under([Path(info["work_dir"])])  # the pod's rootfs, its netns, ...
        os.kill(owner.pid, signum)
        owner.wait(timeout=120)
        # SIGTERM: the cluster stops itself; SIGKILL: the reaper does it.
        assert wait_for(lambda: not Path(info["work_dir"]).exists(), 120)
    finally:
        if owner.poll() is None:
            owner.kill()
    assert not host.mounts_under([Path(info["work_dir"])])
    assert not host.bridge_exists(info["bridge"])
    assert not any((h / info["cgroup_root"]).exists() for h in host.cgroup_hierarchies())
    # The reaper removes the directory, then exits itself.
    assert wait_for(lambda: not processes_naming(info["work_dir"]), 30), processes_naming(info["work_dir"])


def processes_naming(path: str) -> str:
    """``pgrep -a -f path``: the processes whose command line names ``path``."""
    return subprocess.run(["pgrep", "-a", "-f", path], capture_output=True, text=True).stdout.strip()
