"""The process kubelet on FakeKubernetes with real short-lived processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubelet_support import (
    PY,
    ReadySignal,
    container_state,
    history,
    phase,
    pod_or_none,
    python_pod,
    wait_gone,
    wait_phase,
)

from k8s_backend.kube.port import CONFIG_MAPS, PODS
from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.local.kubelet.processes import session_members
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
IGNORE_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)"


@pytest.fixture
def ready(tmp_path: Path) -> Iterator[ReadySignal]:
    signal_ = ReadySignal(tmp_path)
    yield signal_
    signal_.close()


def states(events: list[tuple[str, Obj]]) -> list[str]:
    """The container's successive states in a pod's events, without repeats."""
    seen: list[str] = []
    for _, pod in events:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if not statuses:
            continue
        kind, detail = next(iter(statuses[0]["state"].items()))
        label = f"{kind}:{detail.get('reason', '')}".rstrip(":")
        if not seen or seen[-1] != label:
            seen.append(label)
    return seen


def test_failed_container_reports_its_exit_code_through_realistic_transitions(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    since = fake.resource_version
    fake.create(PODS, "default", python_pod("fails", "import sys; print('bye'); sys.exit(3)"))
    wait_phase(kubelet, fake, "fails", "Failed")
    pod = fake.get(PODS, "default", "fails")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert {"startedAt", "finishedAt", "containerID"} <= terminated.keys()
    assert pod["spec"]["nodeName"] == "node-1"
    assert (pod["status"]["podIP"], pod["status"]["hostIP"]) == ("127.0.0.1", "127.0.0.1")
    assert states(history(fake, since, "fails")) == [
        "waiting:ContainerCreating",
        "running",
        "terminated:Error",
    ]
    log_path = kubelet.log_path("default", "fails", "main")
    assert log_path is not None and log_path.read_text() == "bye\n"


def test_successful_container_completes_and_a_finished_pod_is_removed_at_once(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", python_pod("ok", "pass"))
    wait_phase(kubelet, fake, "ok", "Succeeded")
    assert container_state(fake, "ok")["terminated"]["reason"] == "Completed"
    fake.delete(PODS, "default", "ok")
    assert pod_or_none(fake, "ok") is None


def test_graceful_deletion_sends_sigterm_and_finalizes(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    fake.create(PODS, "default", python_pod("obeys", ready.code()))
    ready.wait()
    since = fake.resource_version
    fake.delete(PODS, "default", "obeys", grace_period_seconds=30)
    wait_gone(kubelet, fake, "obeys")
    events = history(fake, since, "obeys")
    assert events[0][1]["metadata"]["deletionGracePeriodSeconds"] == 30  # it stayed, terminating
    kind, last = events[-1]
    assert kind == "DELETED"
    terminated = last["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 143  # ended by SIGTERM well within the grace period
    assert kubelet.processes() == []


def test_sigkill_after_the_grace_period(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    fake.create(PODS, "default", python_pod("stubborn", ready.code(IGNORE_TERM)))
    ready.wait()
    since = fake.resource_version
    fake.delete(PODS, "default", "stubborn", grace_period_seconds=1)
    wait_gone(kubelet, fake, "stubborn")
    terminated = history(fake, since, "stubborn")[-1][1]["status"]["containerStatuses"][0]["state"][
        "terminated"
    ]
    assert (terminated["exitCode"], terminated["signal"]) == (137, 9)


def test_pod_removed_without_grace_still_has_its_process_stopped(tmp_path: Path, ready: ReadySignal) -> None:
    fake = FakeKubernetes(graceful_pod_deletion=False)
    with ProcessKubelet(fake, work_dir=tmp_path, stop_grace=0.5) as kubelet:
        fake.create(PODS, "default", python_pod("abrupt", ready.code(), grace=1))
        ready.wait()
        handles = kubelet.processes()
        fake.delete(PODS, "default", "abrupt")
        assert kubelet.wait_until(lambda: kubelet.processes() == [], 20)
        assert all(session_members(h.pid) == [] for h in handles)


def test_exceeding_the_memory_limit_is_oomkilled(fake: FakeKubernetes, kubelet: ProcessKubelet) -> None:
    code = "import time; b = b'x' * (400 * 1024 * 1024); time.sleep(60)"
    fake.create(PODS, "default", python_pod("hungry", code, memory_limit="128Mi"))
    wait_phase(kubelet, fake, "hungry", "Failed")
    terminated = container_state(fake, "hungry")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")


def test_unschedulable_until_capacity_frees(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    fake.create(PODS, "default", python_pod("big", ready.code(), cpu="3"))
    ready.wait()
    fake.create(PODS, "default", python_pod("waits", "pass", cpu="2"))
    assert kubelet.wait_until(
        lambda: bool((pod_or_none(fake, "waits") or {}).get("status", {}).get("conditions"))
    )
    pod = fake.get(PODS, "default", "waits")
    assert pod["status"]["phase"] == "Pending"
    (condition,) = pod["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert "nodeName" not in pod["spec"]

    fake.delete(PODS, "default", "big", grace_period_seconds=5)
    wait_phase(kubelet, fake, "waits", "Succeeded")
    assert fake.get(PODS, "default", "waits")["spec"]["nodeName"] == "node-1"


def test_a_finished_pod_frees_its_capacity(fake: FakeKubernetes, kubelet: ProcessKubelet) -> None:
    fake.create(PODS, "default", python_pod("first", "pass", cpu="4"))
    fake.create(PODS, "default", python_pod("second", "pass", cpu="4"))
    wait_phase(kubelet, fake, "second", "Succeeded")
    assert phase(fake, "first") == "Succeeded"


def test_unknown_image_waits_in_err_image_pull_then_back_off(fake: FakeKubernetes, tmp_path: Path) -> None:
    images = ImagePolicy(["python:3.11"], backoff_initial=0.05)
    with ProcessKubelet(fake, work_dir=tmp_path, images=images) as kubelet:
        fake.create(PODS, "default", python_pod("pull", "pass", image="registry.example/missing:1"))
        reasons: set[str] = set()

        def seen_both() -> bool:
            reasons.add(container_state(fake, "pull").get("waiting", {}).get("reason", ""))
            return {"ErrImagePull", "ImagePullBackOff"} <= reasons

        assert kubelet.wait_until(seen_both, 20)
        pod = fake.get(PODS, "default", "pull")
        assert pod["status"]["phase"] == "Pending"
        assert kubelet.processes() == []
        fake.delete(PODS, "default", "pull", grace_period_seconds=30)
        wait_gone(kubelet, fake, "pull")


def test_init_container_runs_first_and_shares_volumes_and_env(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(CONFIG_MAPS, "default", {"metadata": {"name": "settings"}, "data": {"greeting": "hello"}})
    # WORK is a container path: the kubelet maps it onto the pod's emptyDir directory. It must not
    # contain this interpreter's path, which the container's command names as if it were in the image.
    mount_path = "/k8s-backend-test-work"
    assert not PY.startswith(mount_path)
    mount = {
        "volumeMounts": [{"name": "work", "mountPath": mount_path}],
        "env": [{"name": "WORK", "value": mount_path}],
    }
    pod = python_pod(
        "staged",
        f"import os; w = os.environ['WORK']; print(open(w + '/msg').read(), w != {mount_path!r}, "
        "os.environ['GREETING'], os.environ['POD'], os.environ['IP'])",
        volumes=[{"name": "work", "emptyDir": {}}],
        initContainers=[
            {
                "name": "setup",
                "image": "python:3.11",
                "command": [PY, "-c", "import os; open(os.environ['WORK'] + '/msg', 'w').write('from-init')"],
                **mount,
            }
        ],
    )
    main = pod["spec"]["containers"][0]
    main.update(mount)
    main["env"] = [
        *mount["env"],
        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}}},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    fake.create(PODS, "default", pod)
    wait_phase(kubelet, fake, "staged", "Succeeded")
    status = fake.get(PODS, "default", "staged")["status"]
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    log_path = kubelet.log_path("default", "staged", "main")
    assert log_path is not None and log_path.read_text() == "from-init True hello staged 127.0.0.1\n"


def test_on_failure_restarts_with_a_restart_count(fake: FakeKubernetes, kubelet: ProcessKubelet) -> None:
    code = (
        "import os, sys\n"
        "marker = os.path.join(os.getcwd(), 'tried')\n"
        "first = not os.path.exists(marker)\n"
        "open(marker, 'w').close()\n"
        "sys.exit(1 if first else 0)"
    )
    fake.create(PODS, "default", python_pod("retry", code, restart_policy="OnFailure"))
    wait_phase(kubelet, fake, "retry", "Succeeded")
    entry = fake.get(PODS, "default", "retry")["status"]["containerStatuses"][0]
    assert entry["restartCount"] == 1
    assert entry["lastState"]["terminated"]["exitCode"] == 1


def test_missing_config_map_waits_then_starts_once_it_exists(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    pod = python_pod("configured", "import os; print(os.environ['X'])")
    pod["spec"]["containers"][0]["env"] = [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "x"}}}
    ]
    fake.create(PODS, "default", pod)
    assert kubelet.wait_until(
        lambda: (
            container_state(fake, "configured").get("waiting", {}).get("reason")
            == "CreateContainerConfigError"
        )
    )
    assert container_state(fake, "configured")["waiting"]["message"] == 'configmap "later" not found'
    fake.create(CONFIG_MAPS, "default", {"metadata": {"name": "later"}, "data": {"x": "42"}})
    wait_phase(kubelet, fake, "configured", "Succeeded")


def test_without_processes_pods_run_and_delete_at_once(fake: FakeKubernetes, tmp_path: Path) -> None:
    with ProcessKubelet(
        fake, work_dir=tmp_path, run_processes=False, nodes=[Node.of("n", cpu="1000")]
    ) as kubelet:
        init = [{"name": "setup", "image": "busybox", "command": ["false"]}]
        since = fake.resource_version
        for i in range(30):
            fake.create(
                PODS, "default", python_pod(f"p{i}", "import sys; sys.exit(9)", cpu="1", initContainers=init)
            )
        assert kubelet.wait_until(lambda: all(phase(fake, f"p{i}") == "Running" for i in range(30)), 20)
        assert kubelet.processes() == []
        assert container_state(fake, "p0")["running"]["startedAt"]
        status = fake.get(PODS, "default", "p0")["status"]
        assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
        assert fake.get(PODS, "default", "p0")["spec"]["nodeName"] == "n"
        # Two writes per pod (bind, then Running), however many pods there are.
        for name in ("p0", "p29"):
            assert [kind for kind, _ in history(fake, since, name)] == ["ADDED", "MODIFIED", "MODIFIED"]
        fake.delete_collection(PODS, "default", grace_period_seconds=30)
        assert kubelet.wait_until(lambda: fake.objects(PODS) == [], 20)


def test_stop_terminates_every_process(fake: FakeKubernetes, tmp_path: Path, ready: ReadySignal) -> None:
    kubelet = ProcessKubelet(fake, work_dir=tmp_path, stop_grace=0.3)
    kubelet.start()
    fake.create(PODS, "default", python_pod("a", ready.code(IGNORE_TERM)))
    fake.create(PODS, "default", python_pod("b", ready.code()))
    ready.wait()
    ready.wait()
    handles = kubelet.processes()
    assert len(handles) == 2
    kubelet.stop()
    assert kubelet.processes() == []
    assert all(session_members(h.pid) == [] for h in handles)
