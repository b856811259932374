"""ControlPlane: the real kube-apiserver, controller manager, scheduler and etcd built from the Go modules.

Marked ``real``: skipped (with the one-line reason) when Go is missing and nothing is cached.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo import REPO_ROOT

from k8s_backend.kube.port import CONFIG_MAPS, NAMESPACES, PODS, UnauthorizedError
from k8s_backend.local.control_plane import (
    BuildError,
    ControlPlane,
    ControlPlaneBinaries,
    ControlPlaneBuilder,
    ControlPlaneError,
)
from k8s_backend.local.control_plane.build import ETCD_VERSION, KUBERNETES_VERSION, find_go
from k8s_backend.local.control_plane.runner import remove_stale_work_dirs
from k8s_backend.local.kubelet.processes import process_table

REPO = REPO_ROOT

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]  # the first use may build (~10 minutes)


@pytest.fixture(scope="module")
def binaries() -> ControlPlaneBinaries:
    try:
        return ControlPlaneBuilder(progress=lambda line: print(line, flush=True)).ensure()
    except BuildError as error:
        pytest.skip(str(error).splitlines()[0])


@pytest.fixture(scope="module")
def cp(binaries: ControlPlaneBinaries) -> Iterator[ControlPlane]:
    with ControlPlane(binaries) as started:
        yield started


def pids_of(paths: list[str]) -> list[int]:
    """Live processes running one of these executables."""
    found = []
    for info in process_table():
        try:
            exe = os.readlink(f"/proc/{info.pid}/exe")
        except OSError:
            continue
        if exe in paths:
            found.append(info.pid)
    return found


def wait_until_gone(paths: list[str], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := pids_of(paths)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_version_is_the_pinned_release(cp: ControlPlane, binaries: ControlPlaneBinaries) -> None:
    status, version = cp.request("GET", "/version")
    assert status == 200
    assert version["gitVersion"] == KUBERNETES_VERSION
    assert (version["major"], version["minor"]) == ("1", "37")
    assert version["gitTreeState"] == "clean"
    etcd = subprocess.run([str(binaries.etcd), "--version"], capture_output=True, text=True, check=True)
    assert f"etcd Version: {ETCD_VERSION.removeprefix('v')}" in etcd.stdout


def test_kubeconfig_works_with_the_official_client(cp: ControlPlane) -> None:
    from kubernetes import client, config

    api_client = config.new_client_from_config(cp.kubeconfig)
    try:
        names = [ns.metadata.name for ns in client.CoreV1Api(api_client).list_namespace().items]
    finally:
        api_client.close()
    assert {"default", "kube-system"} <= set(names)


def test_kubectl_works_with_the_kubeconfig(cp: ControlPlane) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run(
        [kubectl, "--kubeconfig", cp.kubeconfig, "create", "token", "default", "-n", "default"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.count(".") == 2  # a JWT


def test_the_adapter_creates_pods_once_the_default_service_account_exists(cp: ControlPlane) -> None:
    api = cp.api()
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
    created = api.create(PODS, "default", pod)
    assert created["spec"]["serviceAccountName"] == "default"
    api.delete(PODS, "default", "p", grace_period_seconds=0)


def test_token_request_for_the_default_service_account(cp: ControlPlane) -> None:
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    status, answer = cp.request(
        "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", body=request
    )
    assert status == 201, answer
    token = answer["status"]["token"]
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    status, reviewed = cp.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body=review)
    assert status == 201, reviewed
    assert reviewed["status"]["authenticated"] is True
    assert reviewed["status"]["user"]["username"] == "system:serviceaccount:default:default"
    # The token works as a credential, with what RBAC gives the service account (nothing here).
    status, _ = cp.request("GET", "/api/v1/namespaces/default/pods", token=token)
    assert status == 403


def test_a_bad_token_is_unauthorized(cp: ControlPlane) -> None:
    status, answer = cp.request("GET", "/api/v1/namespaces", token="not-a-token")
    assert status == 401
    assert answer["reason"] == "Unauthorized"


def test_the_controller_manager_and_scheduler_act_as_their_own_users(cp: ControlPlane) -> None:
    for user, name in (
        ("controller-manager", "system:kube-controller-manager"),
        ("scheduler", "system:kube-scheduler"),
    ):
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": cp.user(user).token},
        }
        status, reviewed = cp.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body=review)
        assert status == 201
        assert reviewed["status"]["user"]["username"] == name
    assert {p.name for p in cp.processes} == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    }


def test_garbage_collection_and_namespace_deletion_run(cp: ControlPlane) -> None:
    api = cp.api()
    api.create(NAMESPACES, None, {"metadata": {"name": "gc"}})
    owner = api.create(CONFIG_MAPS, "gc", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    api.create(CONFIG_MAPS, "gc", {"metadata": {"name": "dependent", "ownerReferences": [ref]}})
    api.delete(CONFIG_MAPS, "gc", "owner")
    deadline = time.monotonic() + 30
    while "dependent" in [c["metadata"]["name"] for c in api.list(CONFIG_MAPS, "gc").items]:
        assert time.monotonic() < deadline, "the garbage collector did not delete the dependent"
        time.sleep(0.1)
    api.delete(NAMESPACES, None, "gc")


def test_the_processes_are_gone_after_the_context_exits(binaries: ControlPlaneBinaries) -> None:
    paths = [
        str(binaries.path(name))
        for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
    ]
    with ControlPlane(binaries) as plane:
        pids = [p.pid for p in plane.processes]
        work_dir = plane.work_dir
        assert len(pids) == 4
    assert not [pid for pid in pids if pid in pids_of(paths)]
    assert not work_dir.exists()


def test_the_processes_are_gone_after_the_body_raises(binaries: ControlPlaneBinaries) -> None:
    with pytest.raises(RuntimeError, match="boom"), ControlPlane(binaries) as plane:
        pids = [p.pid for p in plane.processes]
        raise RuntimeError("boom")
    assert all(not os.path.exists(f"/proc/{pid}/exe") or _is_zombie_or_gone(pid) for pid in pids)


def _is_zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return True
    return raw[raw.rfind(b")") + 2 :].split()[0] == b"Z"


OWNER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from k8s_backend.local.control_plane import ControlPlane, ControlPlaneBinaries
    binaries = ControlPlaneBinaries(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
    with ControlPlane(binaries, scheduler=False) as cp:
        print(" ".join(str(p.pid) for p in cp.processes), cp.work_dir, flush=True)
        sys.stdin.read()
    """
)


@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["SIGKILL", "SIGTERM", "SIGINT"]
)
def test_no_process_is_left_when_the_owner_dies(binaries: ControlPlaneBinaries, sig: int) -> None:
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            OWNER,
            str(binaries.directory),
            binaries.kubernetes_version,
            binaries.etcd_version,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().decode()
        *numbers, work_dir = line.split()
        pids = [int(pid) for pid in numbers]
        assert len(pids) == 3, line
        owner.send_signal(sig)
        # A bound, not a speed claim: on SIGINT the owner stops its processes one after the other, each
        # given its grace (kube-apiserver takes up to 10 s); two loaded test runs at once took over 60 s.
        owner.wait(timeout=300)
        deadline = time.monotonic() + 30
        while [pid for pid in pids if not _is_zombie_or_gone(pid)] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in pids if not _is_zombie_or_gone(pid)] == []
        # Only SIGINT let the owner clean up; the next control plane removes what the others left.
        remove_stale_work_dirs()
        assert not Path(work_dir).exists()
    finally:
        owner.kill()
        owner.wait()


def test_without_go_the_error_is_one_line_naming_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        find_go({"PATH": str(tmp_path)})
    message = str(caught.value)
    assert "\n" not in message
    assert "Go >= 1.26" in message
    assert KUBERNETES_VERSION in message
    builder = ControlPlaneBuilder(cache_dir=tmp_path, environ={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert builder.cached() is None
    with pytest.raises(BuildError, match="needs Go"):
        builder.ensure()


def test_the_cache_is_reused(binaries: ControlPlaneBinaries) -> None:
    started = time.monotonic()
    again = ControlPlaneBuilder(cache_dir=binaries.directory.parent).cached()
    assert again == binaries
    assert time.monotonic() - started < 30


def test_unauthorized_through_the_adapter(cp: ControlPlane) -> None:
    from k8s_backend.conf.model import ApiClientConf
    from k8s_backend.kube.client import OfficialKubernetesApi

    conf = ApiClientConf(master=cp.url, oauth_token="wrong", ca_cert_file=cp.ca_file)
    api = OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ={"HOME": "/nonexistent"})
    try:
        with pytest.raises(UnauthorizedError):
            api.list(PODS, "default")
    finally:
        api.close()


def test_the_build_command_reports_where_the_binaries_are(binaries: ControlPlaneBinaries) -> None:
    env = {**os.environ, "K8S_BACKEND_CACHE_DIR": str(binaries.directory.parent.parent)}
    out = subprocess.run(
        [sys.executable, "-m", "k8s_backend.local.control_plane", "build"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    ).stdout
    assert f"kube-apiserver: {binaries.kube_apiserver}" in out
    assert f"etcd: {binaries.etcd}" in out


def test_a_failed_start_raises_with_the_end_of_the_failing_log(binaries: ControlPlaneBinaries) -> None:
    plane = ControlPlane(binaries, scheduler=False, controllers=("no-such-controller",))
    with pytest.raises(ControlPlaneError) as caught:
        plane.start()
    message = str(caught.value)
    assert "kube-controller-manager exited" in message
    assert "no-such-controller" in message  # from its log
    assert not [p for p in plane.processes if p.alive()]


@pytest.mark.parametrize("optional", [True, False])
def test_without_go_an_optional_build_succeeds_with_one_line(tmp_path: Path, optional: bool) -> None:
    # What the test command runs first: a machine without Go still runs the rest of the suite.
    env = {**os.environ, "K8S_BACKEND_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/nonexistent"}
    flags = ["--optional"] if optional else []
    done = subprocess.run(
        [sys.executable, "-m", "k8s_backend.local.control_plane", "build", *flags],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env=env,
    )
    assert done.returncode == (0 if optional else 1), done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "needs Go >= 1.26 on PATH" in line and ("skipped" in line) is optional
