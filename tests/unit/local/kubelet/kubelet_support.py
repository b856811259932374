"""Pod builders and waits shared by the kubelet tests."""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from k8s_backend.kube.port import PODS, NotFoundError, Obj
from k8s_backend.local.kubelet import ProcessKubelet
from k8s_backend.testing import FakeKubernetes

PY = sys.executable


def python_pod(
    name: str,
    code: str,
    *,
    image: str = "python:3.11",
    restart_policy: str = "Never",
    cpu: str | None = None,
    memory_limit: str | None = None,
    grace: int | None = None,
    **spec_extra: Any,
) -> Obj:
    """A pod with one container running ``python -c code`` (this interpreter)."""
    container: Obj = {"name": "main", "image": image, "command": [PY, "-c", code]}
    resources: Obj = {}
    if cpu is not None:
        resources.setdefault("requests", {})["cpu"] = cpu
    if memory_limit is not None:
        resources.setdefault("limits", {})["memory"] = memory_limit
        resources.setdefault("requests", {})["memory"] = memory_limit
    if resources:
        container["resources"] = resources
    spec: Obj = {"restartPolicy": restart_policy, "containers": [container], **spec_extra}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


class ReadySignal:
    """A FIFO a child process writes to once it is set up, so a test waits on an event, not a sleep."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / f"ready-{os.getpid()}-{id(self)}"
        os.mkfifo(self.path)
        # Read-write keeps the FIFO open without a writer, so select() only wakes on real data.
        self._fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)
        self._pending = 0

    def code(self, before: str = "", after: str = "import time; time.sleep(60)") -> str:
        """Python code running ``before``, signalling readiness, then running ``after``."""
        signal_ready = f"open({str(self.path)!r}, 'w').write('ready\\n')"
        return "\n".join(part for part in (before, signal_ready, after) if part)

    def wait(self, timeout: float = 20.0) -> None:
        """Wait for one more child to signal (several may signal in one read)."""
        while self._pending == 0:
            readable, _, _ = select.select([self._fd], [], [], timeout)
            assert readable, f"the child never signalled readiness within {timeout} s"
            self._pending += os.read(self._fd, 4096).count(b"ready")
        self._pending -= 1

    def close(self) -> None:
        os.close(self._fd)


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds passed (for conditions no event signals)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(0.01)
    return True


def pod_or_none(fake: FakeKubernetes, name: str, namespace: str = "default") -> Obj | None:
    try:
        return fake.get(PODS, namespace, name)
    except NotFoundError:
        return None


def phase(fake: FakeKubernetes, name: str) -> str | None:
    pod = pod_or_none(fake, name)
    return None if pod is None else (pod.get("status") or {}).get("phase")


def container_state(fake: FakeKubernetes, name: str, index: int = 0) -> Obj:
    pod = pod_or_none(fake, name) or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return dict(statuses[index]["state"]) if len(statuses) > index else {}


def wait_phase(
    kubelet: ProcessKubelet, fake: FakeKubernetes, name: str, wanted: str, timeout: float = 20
) -> None:
    # A pod that ends in the other terminal phase will not change again: stop waiting then.
    settled = {wanted, "Succeeded", "Failed"}
    kubelet.wait_until(lambda: phase(fake, name) in settled, timeout)
    assert phase(fake, name) == wanted, f"pod {name} never reached {wanted}; now {pod_or_none(fake, name)}"


def wait_gone(kubelet: ProcessKubelet, fake: FakeKubernetes, name: str, timeout: float = 20) -> None:
    assert kubelet.wait_until(lambda: pod_or_none(fake, name) is None, timeout), (
        f"pod {name} was never removed; now {pod_or_none(fake, name)}"
    )


def wait_log(kubelet: ProcessKubelet, name: str, text: str, timeout: float = 20) -> None:
    def logged() -> bool:
        path = kubelet.log_path("default", name, "main")
        return path is not None and path.exists() and text in path.read_text()

    assert kubelet.wait_until(logged, timeout), f"{text!r} never appeared in the log of pod {name}"


def history(fake: FakeKubernetes, since: str, name: str) -> list[tuple[str, Obj]]:
    """Every event about pod ``name`` after resourceVersion ``since``, up to its removal or the present."""
    events: list[tuple[str, Obj]] = []
    end = int(fake.resource_version)
    stream = fake.watch(PODS, "default", resource_version=since, timeout_seconds=5)
    try:
        for event in stream:
            if event.object["metadata"].get("name") == name:
                events.append((event.type, event.object))
            if int(event.object["metadata"].get("resourceVersion", 0)) >= end:
                break
    finally:
        stream.close()
    return events
