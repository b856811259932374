"""The kubelet's real-server seam without a real server: RemoteKubeletApi over the official-client adapter
against the embedded API server (pods/status merge patches, the final delete with grace 0), with
``schedule=False`` so only pods bound to its node run. Same code as on a real control plane (tests/real)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import NAMESPACES, PODS, NotFoundError
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local.apiserver import ApiServer
from k8s_backend.local.kubelet import Node, ProcessKubelet
from k8s_backend.local.kubelet.remote import RemoteKubeletApi
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
TOKEN = "remote-seam-token"


def until(predicate: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.02)


@pytest.fixture
def fake() -> FakeKubernetes:
    store = FakeKubernetes(graceful_pod_deletion=True)
    store.create(NAMESPACES, None, {"metadata": {"name": "default"}})
    return store


@pytest.fixture
def kubelet(fake: FakeKubernetes, tmp_path: Path) -> Iterator[ProcessKubelet]:
    server = ApiServer(fake, token=TOKEN)
    server.start()
    conf = ApiClientConf(master=server.url, oauth_token=TOKEN)
    api = OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ={"HOME": str(tmp_path)})
    running = ProcessKubelet(
        RemoteKubeletApi(api),
        work_dir=tmp_path,
        nodes=[Node.of("node-1")],
        schedule=False,
        register_nodes=False,  # the embedded server serves no Nodes or Leases
        stop_grace=1.0,
    )
    running.start()
    try:
        yield running
    finally:
        running.stop()
        api.close()
        server.stop()


def pod(name: str, code: str, node: str | None = "node-1") -> Obj:
    spec: Obj = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "python:3", "command": [sys.executable, "-c", code]}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def phase(fake: FakeKubernetes, name: str) -> str | None:
    try:
        return str(fake.get(PODS, "default", name).get("status", {}).get("phase", ""))
    except NotFoundError:
        return None


def test_bound_pods_run_and_report_through_the_status_subresource(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", pod("fails", "raise SystemExit(4)"))
    until(lambda: phase(fake, "fails") == "Failed", "pod fails Failed")
    terminated = fake.get(PODS, "default", "fails")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (4, "Error")


def test_unbound_and_foreign_pods_are_left_to_the_scheduler(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", pod("unbound", "pass", node=None))
    fake.create(PODS, "default", pod("foreign", "pass", node="node-9"))
    fake.create(PODS, "default", pod("ours", "pass"))
    until(lambda: phase(fake, "ours") == "Succeeded", "pod ours Succeeded")
    for untouched in ("unbound", "foreign"):
        status = fake.get(PODS, "default", untouched).get("status") or {}
        assert status.get("phase") == "Pending" and "containerStatuses" not in status, status
    # Bound later (as kube-scheduler's binding arrives): it runs.
    fake.bind("default", "unbound", "node-1")
    until(lambda: phase(fake, "unbound") == "Succeeded", "pod unbound Succeeded once bound")


def test_graceful_deletion_ends_with_a_delete_of_grace_zero(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", pod("sleeps", "import time; time.sleep(600)"))
    until(lambda: kubelet.processes(), "the process started")
    fake.delete(PODS, "default", "sleeps", grace_period_seconds=300)
    assert fake.get(PODS, "default", "sleeps")["metadata"]["deletionGracePeriodSeconds"] == 300
    until(lambda: phase(fake, "sleeps") is None, "pod sleeps removed long before its 300 s")
    assert kubelet.processes() == []
