"""LocalCluster as a whole: kubeconfig, the real adapter over HTTP, and no process left behind."""

from __future__ import annotations

import json
import os
import select
import signal
import ssl
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo import REPO_ROOT

from k8s_backend.kube.port import PODS, ApiError
from k8s_backend.local.kubelet.processes import session_members
from k8s_backend.testing import LocalCluster

Obj = dict[str, Any]
PY = sys.executable
REPO = REPO_ROOT


def sleeper(name: str, **extra: Any) -> Obj:
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(120)"
    container = {"name": "main", "image": "python:3.11", "command": [PY, "-c", code], **extra}
    return {"metadata": {"name": name}, "spec": {"restartPolicy": "Never", "containers": [container]}}


def wait_for_exit(pid: int, timeout: float = 20.0) -> bool:
    """Wait for a process that is not our child to end (a pidfd becomes readable when it does)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def test_starts_writes_a_kubeconfig_and_serves_the_real_adapter() -> None:
    with LocalCluster(token="t0k3n") as cluster:
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == cluster.url
        assert config["users"][0]["user"] == {"token": "t0k3n"}
        assert config["current-context"] == "k8s-backend-local"
        assert cluster.master == "pyk8s://" + cluster.url
        assert cluster.spark_k8s_master == "k8s://" + cluster.url

        api = cluster.api()
        api.create(PODS, "default", {"metadata": {"name": "hello"}, "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "python:3.11", "command": [PY, "-c", "print('hi')"]}],
        }})  # fmt: skip
        assert cluster.wait_until(lambda: cluster.pod_phase("hello") == "Succeeded")
        pod = api.get(PODS, "default", "hello")
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(cluster.url + "/api/v1/namespaces/default/pods", timeout=10)
        assert refused.value.code == 401
        work_dir = cluster.work_dir
    assert not work_dir.exists()  # a temporary work dir goes with the cluster


def test_no_process_survives_an_exception_in_the_body() -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="test body failed"), LocalCluster(stop_grace=1.0) as cluster:
        for name in ("a", "b"):
            cluster.fake.create(PODS, "default", sleeper(name))
        assert cluster.wait_until(lambda: len(cluster.kubelet.processes()) == 2)
        pids.extend(h.pid for h in cluster.kubelet.processes())
        raise RuntimeError("test body failed")
    assert len(pids) == 2
    assert all(session_members(pid) == [] for pid in pids)


def test_unknown_image_and_allocation_only_mode() -> None:
    with LocalCluster(run_processes=False, known_images=["apache/spark"]) as cluster:
        api = cluster.api()
        for i in range(20):
            body = sleeper(f"p{i}")
            body["spec"]["containers"][0]["image"] = "apache/spark:4.0.0"
            api.create(PODS, "default", body)
        api.create(PODS, "default", sleeper("nope"))
        assert cluster.wait_until(lambda: all(cluster.pod_phase(f"p{i}") == "Running" for i in range(20)))
        assert cluster.kubelet.processes() == []

        def waiting_reason() -> str:
            statuses = api.get(PODS, "default", "nope").get("status", {}).get("containerStatuses", [{}])
            return str(statuses[0].get("state", {}).get("waiting", {}).get("reason", ""))

        # Image pulls fail the same way without processes: scale tests can inject them too.
        assert cluster.wait_until(lambda: waiting_reason() in ("ErrImagePull", "ImagePullBackOff"))
        assert cluster.pod_phase("nope") == "Pending"
        api.delete_collection(PODS, "default")
        assert cluster.wait_until(lambda: cluster.fake.objects(PODS) == [])


def _run_script(body: str, tmp_path: Path) -> subprocess.Popen[str]:
    script = tmp_path / "cluster_script.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, text=True, env=env)


CLUSTER_SCRIPT = """
import json, sys, time
from k8s_backend.kube.port import PODS
from k8s_backend.testing import LocalCluster
code = "import os, time; time.sleep(120)"
with LocalCluster(stop_grace=1.0) as cluster:
    cluster.fake.create(PODS, "default", {"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never",
        "containers": [{"name": "main", "image": "x", "command": [sys.executable, "-c", code]}]}})
    cluster.wait_until(lambda: len(cluster.kubelet.processes()) == 1)
    print(json.dumps([h.pid for h in cluster.kubelet.processes()]), flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_every_process(sig: signal.Signals, tmp_path: Path) -> None:
    script = _run_script(CLUSTER_SCRIPT, tmp_path)
    assert script.stdout is not None
    pids = json.loads(script.stdout.readline())
    assert len(pids) == 1 and session_members(pids[0])
    script.send_signal(sig)
    script.communicate(timeout=30)
    assert script.returncode in (-sig, 128 + sig, 1)
    assert session_members(pids[0]) == []


def test_even_sigkill_of_the_python_process_takes_the_containers_down(tmp_path: Path) -> None:
    script = _run_script(CLUSTER_SCRIPT, tmp_path)
    assert script.stdout is not None
    pids = json.loads(script.stdout.readline())
    script.kill()
    script.communicate(timeout=30)
    # No cleanup code ran: the kernel's parent-death signal (set by the kubelet's launcher) did it.
    assert wait_for_exit(pids[0])


def test_the_local_command_prints_how_to_connect_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = subprocess.Popen(
        [PY, "-m", "k8s_backend.cli.main", "local", "--work-dir", str(tmp_path / "work")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert command.stdout is not None
    lines = []
    while not lines or not lines[-1].startswith("Press Ctrl-C"):
        line = command.stdout.readline()
        assert line, f"the command ended early: {lines}"
        lines.append(line.rstrip("\n"))
    text = "\n".join(lines)
    url = next(line.split()[-1] for line in lines if line.strip().startswith("API server:"))
    assert f"pyspark --master k8s://{url}" in text
    assert f"export KUBECONFIG={tmp_path / 'work' / 'kubeconfig'}" in text
    token = text.split("spark.kubernetes.authenticate.oauthToken=")[1].split()[0]
    assert len(token) >= 32  # a random token by default: the kubelet runs any pod's command here
    assert url.startswith("https://")  # kubectl sends no token over plain http
    ca = tmp_path / "work" / "pki" / "ca.crt"
    assert f"spark.kubernetes.authenticate.caCertFile={ca}" in text
    trusted = ssl.create_default_context(cafile=str(ca))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url + "/api/v1/namespaces/default/pods", timeout=10, context=trusted)
    assert refused.value.code == 401
    pods = urllib.request.Request(
        url + "/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(pods, timeout=10, context=trusted) as response:
        assert json.loads(response.read())["kind"] == "PodList"
    command.send_signal(signal.SIGINT)
    command.communicate(timeout=30)
    assert command.returncode == 0
    assert (tmp_path / "work" / "kubeconfig").exists()  # a given work dir is kept


def test_bad_use_is_reported_clearly() -> None:
    cluster = LocalCluster()
    with pytest.raises(RuntimeError, match="not running"):
        _ = cluster.url
    with cluster, pytest.raises(RuntimeError, match="already started"):
        cluster.start()
    with pytest.raises(TypeError, match="pass a collection"):
        LocalCluster(known_images="apache/spark")  # type: ignore[arg-type]


def test_api_errors_come_back_typed() -> None:
    with LocalCluster(run_processes=False) as cluster, pytest.raises(ApiError) as missing:
        cluster.api().get(PODS, "default", "absent")
    assert missing.value.status == 404


def test_by_default_a_random_token_keeps_others_from_running_commands_here(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "command": ["/bin/sh", "-c", f"id > {marker}"]}]}}  # fmt: skip
    with LocalCluster() as cluster, LocalCluster() as other:
        assert len(cluster.token) >= 32 and cluster.token != other.token
        request = urllib.request.Request(
            cluster.url + "/api/v1/namespaces/default/pods",
            data=json.dumps(pod).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        assert cluster.fake.objects(PODS) == []
        # Everything the cluster hands out carries the token.
        assert yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"] == {"token": cluster.token}
        conf = cluster.spark_conf()
        assert conf["spark.kubernetes.authenticate.oauthToken"] == cluster.token
        assert conf["spark.kubernetes.authenticate.submission.oauthToken"] == cluster.token
        assert cluster.api().list(PODS, "default").items == []
    assert not marker.exists()


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty token"):
        LocalCluster(token="")


def test_the_kubeconfig_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "kubeconfig").write_text("old")
    (work / "kubeconfig").chmod(0o666)  # an earlier file with a wide mode is narrowed too
    old_umask = os.umask(0)
    try:
        with LocalCluster(run_processes=False, token="s3cret", work_dir=work) as cluster:
            assert "s3cret" in cluster.kubeconfig.read_text()
            assert cluster.kubeconfig.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old_umask)


def test_the_repr_says_where_it_runs_and_the_image_follows_pyspark() -> None:
    from importlib import metadata

    cluster = LocalCluster(run_processes=False)
    nodes = "nodes: node-1 (cpu=100000, memory=1000Ti)"
    assert repr(cluster) == f"<LocalCluster not started; no processes; {nodes}>"
    with cluster:
        assert repr(cluster).startswith(f"<LocalCluster running at {cluster.url}; no processes;")
        image = cluster.spark_conf()["spark.kubernetes.container.image"]
        assert image == f"apache/spark:{metadata.version('pyspark')}"
    assert repr(cluster).startswith("<LocalCluster stopped;")


def test_a_failed_start_removes_the_work_dir_it_made_and_keeps_one_that_was_there(tmp_path: Path) -> None:
    made, there = tmp_path / "made" / "work", tmp_path / "there"
    there.mkdir()
    for work in (made, there):
        with pytest.raises(OSError):  # 192.0.2.1 (TEST-NET-1) is no address of this machine
            LocalCluster(run_processes=False, host="192.0.2.1", work_dir=work).start()
    assert not made.exists()
    assert there.is_dir()
