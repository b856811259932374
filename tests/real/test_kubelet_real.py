"""The process kubelet as the node agent of a real control plane: it registers Nodes and renews their
Leases, runs the pods that kube-scheduler binds to them as local processes, reports exit codes through
``pods/status``, honours graceful deletion, mounts projected service-account tokens, and leaves nothing.

The kubelet talks to the API as a node user (``system:nodes``), not as the admin.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from backend_real_support import until as until_in_support

from k8s_backend.kube.port import EVENTS, LEASES, PODS, NotFoundError
from k8s_backend.local.control_plane import ControlPlane
from k8s_backend.local.kubelet import Node, ProcessKubelet
from k8s_backend.local.kubelet.processes import session_members
from k8s_backend.local.kubelet.remote import NODES, RemoteKubeletApi

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

Obj = dict[str, Any]
PY = sys.executable
NODE = "real-node-1"
IDLE_NODE = "real-idle-1"
DEADLINE = 90.0  # generous: a loaded 2-core machine runs the control plane and the processes
# The one wait of tests/real, at this module's deadline and a finer poll.
until = partial(until_in_support, timeout=DEADLINE, poll=0.05)


def make_kubelet(cp: ControlPlane, work_dir: Path, node: Node, *, run_processes: bool) -> ProcessKubelet:
    api = RemoteKubeletApi(cp.api(kubeconfig=cp.kubelet_kubeconfig))
    return ProcessKubelet(
        api, work_dir=work_dir, nodes=[node], run_processes=run_processes, schedule=False, stop_grace=2.0
    )


@pytest.fixture(scope="module")
def kubelet(cp: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessKubelet]:
    node = Node.of(NODE, cpu="8", memory="16Gi")
    with make_kubelet(cp, tmp_path_factory.mktemp("kubelet"), node, run_processes=True) as running:
        yield running


def pod(name: str, code: str, *, node: str = NODE, grace: int | None = None, **spec: Any) -> Obj:
    container: Obj = {"name": "main", "image": "python:3.11", "command": [PY, "-c", code]}
    body: Obj = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [container],
            "nodeSelector": {"kubernetes.io/hostname": node},
            **spec,
        },
    }
    if grace is not None:
        body["spec"]["terminationGracePeriodSeconds"] = grace
    return body


def get_or_none(cp: ControlPlane, name: str) -> Obj | None:
    try:
        return cp.api().get(PODS, "default", name)
    except NotFoundError:
        return None


def phase_of(cp: ControlPlane, name: str) -> str:
    found = get_or_none(cp, name)
    return "" if found is None else str((found.get("status") or {}).get("phase", ""))


def terminated(cp: ControlPlane, name: str) -> Obj:
    found = get_or_none(cp, name) or {}
    state = found["status"]["containerStatuses"][0]["state"]
    return dict(state["terminated"])


def ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def schedulable(node: Obj) -> bool:
    return not any(
        t["key"] == "node.kubernetes.io/not-ready" for t in (node.get("spec") or {}).get("taints") or []
    )


def test_nodes_register_become_ready_and_renew_their_lease(cp: ControlPlane, kubelet: ProcessKubelet) -> None:
    api = cp.api()
    node = api.get(NODES, None, NODE)
    assert ready(node)
    assert node["status"]["allocatable"]["cpu"] == "8"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE
    # Admission puts the not-ready taint on every new node; the node lifecycle controller lifts it.
    until(lambda: schedulable(api.get(NODES, None, NODE)), "the not-ready taint lifted")
    lease = api.get(LEASES, "kube-node-lease", NODE)
    assert lease["spec"]["holderIdentity"] == NODE
    assert lease["metadata"]["ownerReferences"][0]["name"] == NODE
    first = lease["spec"]["renewTime"]
    until(
        lambda: api.get(LEASES, "kube-node-lease", NODE)["spec"]["renewTime"] != first,
        "the lease renewed",
        timeout=60,
    )


def test_kube_scheduler_binds_and_exit_codes_land_in_status(
    cp: ControlPlane, kubelet: ProcessKubelet
) -> None:
    api = cp.api()
    until(lambda: schedulable(api.get(NODES, None, NODE)), "the node schedulable")
    api.create(PODS, "default", pod("completes", "print('hello')"))
    api.create(PODS, "default", pod("fails", "import sys; sys.exit(3)"))
    until(lambda: phase_of(cp, "completes") == "Succeeded", "pod completes Succeeded")
    until(lambda: phase_of(cp, "fails") == "Failed", "pod fails Failed")
    assert (terminated(cp, "completes")["exitCode"], terminated(cp, "completes")["reason"]) == (
        0,
        "Completed",
    )
    assert (terminated(cp, "fails")["exitCode"], terminated(cp, "fails")["reason"]) == (3, "Error")
    done = api.get(PODS, "default", "completes")
    assert done["spec"]["nodeName"] == NODE
    conditions = {c["type"]: c for c in done["status"]["conditions"]}
    assert conditions["PodScheduled"]["status"] == "True"
    assert conditions["Ready"]["reason"] == "PodCompleted"
    log_path = kubelet.log_path("default", "completes", "main")
    assert log_path is not None and log_path.read_text() == "hello\n"
    # kube-scheduler, not the kubelet, bound it.
    events = api.list(EVENTS, "default", field_selector="involvedObject.name=completes").items
    scheduled = [e for e in events if e.get("reason") == "Scheduled"]
    assert scheduled, events
    assert scheduled[0].get("reportingComponent") == "default-scheduler"
    for name in ("completes", "fails"):
        api.delete(PODS, "default", name)
    until(lambda: get_or_none(cp, "completes") is None and get_or_none(cp, "fails") is None, "pods removed")


def test_projected_service_account_token_is_mounted(cp: ControlPlane, kubelet: ProcessKubelet) -> None:
    # The ServiceAccount admission plugin adds the kube-api-access-* projected volume to every pod.
    api = cp.api()
    path = "/var/run/secrets/kubernetes.io/serviceaccount"
    code = "import sys; print(open(sys.argv[1]).read()); print(open(sys.argv[2]).read()[:27])"
    body = pod("token", code)
    body["spec"]["containers"][0]["args"] = [f"{path}/token", f"{path}/ca.crt"]
    created = api.create(PODS, "default", body)
    volumes = [v["name"] for v in created["spec"]["volumes"]]
    assert any(v.startswith("kube-api-access-") for v in volumes), volumes
    until(lambda: phase_of(cp, "token") in ("Succeeded", "Failed"), "pod token finished")
    log_path = kubelet.log_path("default", "token", "main")
    assert log_path is not None
    token, ca = log_path.read_text().splitlines()[:2]
    assert phase_of(cp, "token") == "Succeeded", log_path.read_text()
    assert token.count(".") == 2  # a JWT from the TokenRequest API
    assert ca == "-----BEGIN CERTIFICATE-----"
    status, review = cp.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
    )
    assert status == 201, review
    assert review["status"]["user"]["username"] == "system:serviceaccount:default:default"
    assert review["status"]["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["token"]
    api.delete(PODS, "default", "token")
    until(lambda: get_or_none(cp, "token") is None, "pod token removed")


def test_graceful_deletion_sends_sigterm_then_the_pod_disappears(
    cp: ControlPlane, kubelet: ProcessKubelet, tmp_path: Path
) -> None:
    api = cp.api()
    marker, armed, release = tmp_path / "sigterm", tmp_path / "armed", tmp_path / "release"
    # On SIGTERM it says so, then exits only once the test has seen the terminating pod (released).
    code = (
        "import os, signal, sys, time\n"
        f"def bye(*_):\n    open({str(marker)!r}, 'w').write('TERM')\n"
        f"    while not os.path.exists({str(release)!r}):\n        time.sleep(0.05)\n    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        f"open({str(armed)!r}, 'w').close()\n"
        "time.sleep(600)\n"
    )
    api.create(PODS, "default", pod("sleeper", code, grace=60))
    until(lambda: phase_of(cp, "sleeper") == "Running", "pod sleeper Running")
    until(armed.exists, "the SIGTERM handler installed")
    handles = kubelet.processes()
    api.delete(PODS, "default", "sleeper")  # the pod's own grace period: 60 s
    until(marker.exists, "SIGTERM delivered")
    terminating = get_or_none(cp, "sleeper")
    assert terminating is not None and terminating["metadata"]["deletionGracePeriodSeconds"] == 60
    release.touch()
    until(lambda: get_or_none(cp, "sleeper") is None, "pod sleeper removed", timeout=55)
    assert marker.read_text() == "TERM"
    assert all(session_members(h.pid) == [] for h in handles)


def test_sigkill_after_the_grace_period(cp: ControlPlane, kubelet: ProcessKubelet, tmp_path: Path) -> None:
    api = cp.api()
    armed = tmp_path / "armed"
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(armed)!r}, 'w').close(); time.sleep(600)"
    )
    api.create(PODS, "default", pod("stubborn", code, grace=2))
    until(armed.exists, "the process ignores SIGTERM")
    since = api.list(PODS, "default").resource_version
    stream = api.watch(PODS, "default", resource_version=since, field_selector="metadata.name=stubborn")
    api.delete(PODS, "default", "stubborn")
    last: Obj = {}
    try:
        for event in stream:
            last = event.object
            if event.type == "DELETED":
                break
    finally:
        stream.close()
    state = last["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (state["exitCode"], state.get("signal")) == (137, 9)  # SIGKILL after the 2 s grace period
    assert kubelet.processes() == []


def test_no_processes_mode_makes_pods_running_at_once(cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    node = Node.of(IDLE_NODE, cpu="1000", memory="1000Gi")
    with make_kubelet(cp, tmp_path, node, run_processes=False) as idle:
        until(lambda: schedulable(api.get(NODES, None, IDLE_NODE)), "the idle node schedulable")
        for index in range(5):
            api.create(PODS, "default", pod(f"idle-{index}", "raise SystemExit(1)", node=IDLE_NODE))
        names = [f"idle-{index}" for index in range(5)]
        until(lambda: all(phase_of(cp, n) == "Running" for n in names), "idle pods Running")
        assert idle.processes() == []
        for name in names:
            api.delete(PODS, "default", name)
        until(lambda: all(get_or_none(cp, n) is None for n in names), "idle pods removed")
    # Once stopped the node reports NotReady and its Lease is gone; the node lifecycle controller taints it.
    assert not ready(api.get(NODES, None, IDLE_NODE))
    with pytest.raises(NotFoundError):
        api.get(LEASES, "kube-node-lease", IDLE_NODE)
    until(lambda: not schedulable(api.get(NODES, None, IDLE_NODE)), "the stopped node tainted")
