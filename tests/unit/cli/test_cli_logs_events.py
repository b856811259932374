"""``k8s-backend logs ID [-e N] [-f]`` and ``k8s-backend events ID``, over HTTP against the embedded API
server (whose ``pods/{name}/log`` reads the files a kubelet writes)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import ENDPOINT, cli

from k8s_backend.cli.common.cluster_api import Connection
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import EVENTS, PODS
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local.apiserver.server import ApiServer
from k8s_backend.pods.objects import owner_reference
from k8s_backend.testing import FakeKubernetes

APP = "spark-" + "6" * 32
M = ["--master", "pyk8s://https://k8s.test:6443"]


def pod(fake: FakeKubernetes, name: str, role: str, container: str, owner: Any = None, **labels: str) -> Any:
    meta: dict[str, Any] = {"name": name, "labels": {"spark-app-selector": APP, "spark-role": role, **labels}}
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    spec = {"containers": [{"name": container, "image": "i"}]}
    return fake.create(PODS, "default", {"metadata": meta, "spec": spec})


def state(fake: FakeKubernetes, name: str, container: str, value: dict[str, Any]) -> None:
    status = {"phase": "Running", "containerStatuses": [{"name": container, "state": value}]}
    fake.patch_status(PODS, "default", name, status)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeKubernetes, Any, Path, ApiServer]]:
    fake = FakeKubernetes()
    driver = pod(fake, "pi-driver", "driver", "spark-kubernetes-driver")
    pod(fake, "pi-exec-1", "executor", "spark-kubernetes-executor", driver, **{"spark-exec-id": "1"})
    logs = tmp_path / "logs"
    logs.mkdir()

    def locate(namespace: str, name: str, container: str) -> Path | None:
        path = logs / f"{name}.log"
        return path if path.exists() else None

    with ApiServer(fake, logs=locate) as server:
        api = OfficialKubernetesApi.from_conf(
            ApiClientConf(master=server.url), namespace_default="default", environ={"HOME": str(tmp_path)}
        )

        def connect(conf: Any, namespace: str) -> Connection:
            return Connection(api, ENDPOINT)

        yield fake, connect, logs, server
        api.close()


def test_logs_prints_the_drivers_log_and_an_executors(served: Any) -> None:
    fake, connect, logs, _ = served
    (logs / "pi-driver.log").write_text("driver line 1\ndriver line 2\n")
    (logs / "pi-exec-1.log").write_text("executor says hi\n")
    state(fake, "pi-driver", "spark-kubernetes-driver", {"running": {}})
    state(fake, "pi-exec-1", "spark-kubernetes-executor", {"running": {}})
    result = cli(["logs", *M, "pi-driver"], connect=connect)
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["driver line 1", "driver line 2"]
    result = cli(["logs", *M, APP, "-e", "1"], connect=connect)
    assert result.out.splitlines() == ["executor says hi"]
    result = cli(["logs", *M, APP, "-e", "7"], connect=connect)
    assert result.code == 2 and "has no executor 7; its executors: 1" in result.err


def test_logs_of_a_container_not_started_says_so_in_one_line(served: Any) -> None:
    fake, connect, _, _ = served
    state(fake, "pi-driver", "spark-kubernetes-driver", {"waiting": {"reason": "ImagePullBackOff"}})
    result = cli(["logs", *M, "pi-driver"], connect=connect)
    assert result.code != 0
    assert "is waiting to start: ImagePullBackOff; use -f to wait for it" in result.err
    assert "Traceback" not in result.err


def test_logs_follow_waits_for_a_pending_pod_then_follows_it_to_its_end(served: Any) -> None:
    fake, connect, logs, server = served
    state(fake, "pi-driver", "spark-kubernetes-driver", {"waiting": {"reason": "ContainerCreating"}})
    out: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        out["result"] = cli(["logs", *M, "pi-driver", "-f"], connect=connect)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    pause = threading.Event()
    for _ in range(6000):  # until it has been told twice that the container waits (it asks again)
        if sum(1 for r in server.request_log if r.status == 400 and "/log" in r.path) >= 2 or done.is_set():
            break
        pause.wait(0.01)
    assert not done.is_set(), "logs -f gave up on a Pending driver"
    (logs / "pi-driver.log").write_text("started\nfinished\n")
    ended = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    state(fake, "pi-driver", "spark-kubernetes-driver", ended)
    assert done.wait(60)
    assert out["result"].code == 0, out["result"].err
    assert out["result"].out.splitlines() == ["started", "finished"]


def test_events_shows_the_events_of_the_applications_pods_only() -> None:
    fake = FakeKubernetes()
    driver = pod(fake, "pi-driver", "driver", "spark-kubernetes-driver")
    pod(fake, "pi-exec-1", "executor", "spark-kubernetes-executor", driver, **{"spark-exec-id": "1"})

    def event(name: str, obj: str, reason: str, message: str, when: str, kind: str = "Warning") -> None:
        body = {
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": obj, "namespace": "default"},
            "reason": reason,
            "message": message,
            "type": kind,
            "lastTimestamp": when,
        }
        fake.create(EVENTS, "default", body)

    unschedulable = "0/3 nodes are available: 3 Insufficient memory."
    event("e2", "pi-exec-1", "FailedScheduling", unschedulable, "2026-12-01T10:00:05Z")
    assigned = "Successfully assigned default/pi-driver to n1"
    event("e1", "pi-driver", "Scheduled", assigned, "2026-12-01T10:00:00Z", "Normal")
    event("e3", "someone-else", "BackOff", "not ours", "2026-12-01T10:00:09Z")
    result = cli(["events", *M, "pi-driver"], fake, wall_clock=lambda: 1796119210.0)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"Events of {APP} (2):"
    assert lines[1].split()[:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert "Scheduled" in lines[2] and "pod/pi-driver" in lines[2]
    assert "FailedScheduling" in lines[3] and "3 Insufficient memory." in lines[3]
    assert "not ours" not in result.out


def test_events_of_a_local_cluster_show_scheduling_failures_assignments_and_kills() -> None:
    """The local cluster's scheduler and kubelet record the Events a real cluster has, and ``events ID``
    prints them over HTTP: two executors that fit nowhere, then a deleted executor makes room for one."""
    from k8s_backend.local.cluster import LocalCluster
    from k8s_backend.local.kubelet import Node

    nodes = [Node.of("node-1", cpu="4", memory="1Gi"), Node.of("node-2", cpu="4", memory="1Gi")]
    with LocalCluster(nodes=nodes, run_processes=False, tls=False) as cluster:
        fake = cluster.fake
        driver = pod(fake, "pi-driver", "driver", "spark-kubernetes-driver")
        for i in range(1, 5):  # 800Mi each: one per node fits, executors 3 and 4 wait
            meta = {
                "name": f"pi-exec-{i}",
                "labels": {"spark-app-selector": APP, "spark-role": "executor", "spark-exec-id": str(i)},
                "ownerReferences": [owner_reference(driver)],
            }
            resources = {"requests": {"memory": "800Mi"}}
            container = {"name": "spark-kubernetes-executor", "image": "i", "resources": resources}
            fake.create(PODS, "default", {"metadata": meta, "spec": {"containers": [container]}})
        recorder = cluster.kubelet.events
        assert recorder is not None

        def seen(name: str, *, node: bool) -> bool:
            found = [p for p in fake.list(PODS, "default").items if p["metadata"]["name"] == name]
            if not found:
                return False
            conditions = (found[0].get("status") or {}).get("conditions") or []
            if node:
                return bool(found[0]["spec"].get("nodeName"))
            return any(c.get("reason") == "Unschedulable" for c in conditions)

        def gone(name: str) -> bool:
            return all(p["metadata"]["name"] != name for p in fake.list(PODS, "default").items)

        def reasons() -> list[tuple[str, str, int]]:
            assert recorder.wait_idle()  # the kubelet recorded them before it wrote the pods' states
            return [
                (
                    e["involvedObject"]["name"],
                    e["reason"],
                    (e.get("series") or {}).get("count") or e.get("count") or 1,
                )
                for e in fake.list(EVENTS, "default").items
            ]

        assert cluster.kubelet.wait_until(
            lambda: seen("pi-exec-4", node=False) and seen("pi-exec-2", node=True)
        )
        assert {("pi-exec-3", "FailedScheduling", 1), ("pi-exec-4", "FailedScheduling", 1)} <= set(reasons())
        fake.delete(PODS, "default", "pi-exec-1")
        assert cluster.kubelet.wait_until(lambda: gone("pi-exec-1") and seen("pi-exec-3", node=True))
        now = reasons()
        assert {("pi-exec-3", "Scheduled", 1), ("pi-exec-1", "Killing", 1)} <= set(now)
        # pi-exec-4 was tried again when pi-exec-1 left: the same Event counts up, no second one
        assert [r for r in now if r[:2] == ("pi-exec-4", "FailedScheduling")] == [
            ("pi-exec-4", "FailedScheduling", 2)
        ]
        api = cluster.api()
        result = cli(["events", *M, APP], connect=lambda conf, namespace: Connection(api, ENDPOINT))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(f"Events of {APP} (")
    text = "\n".join(lines)
    assert "Warning  FailedScheduling  pod/pi-exec-3" in text
    assert "0/2 nodes are available: 2 Insufficient memory. (x2)" in text  # pi-exec-4, tried twice
    assert "Successfully assigned default/pi-exec-3 to node-1" in text
    assert "Normal   Killing           pod/pi-exec-1" in text
    assert "Stopping container spark-kubernetes-executor" in text
    assert "Started container spark-kubernetes-executor" in text
