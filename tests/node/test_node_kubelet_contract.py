"""The process kubelet held against the real one: the same pods on both, and what each reports compared.

For every case the observation is the pod's final phase, its container's state (terminated, waiting or
running), that state's reason and exit code, and the set of Event reasons recorded about the pod. What
legitimately differs (container IDs, times, messages, counts) is left out. A difference that is real is
either fixed in the process kubelet or listed in ``KNOWN_DIFFERENCES`` (and in docs/local-cluster.md,
"Known differences of the process kubelet"); the list is asserted exactly, so a fixed difference fails
the test until its line is removed.

Both kubelets run on the real control plane, one cluster after the other (two at once would share two
cores): the process kubelet (``runtime="processes"``) and the real node (``runtime="containers"``). The
pods of a cluster all run at once; pods that are deleted carry a finalizer, so that their last status
stays readable after the kubelet finished their deletion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from node_env import node_missing, wait_for

from k8s_backend.kube.port import EVENTS, PODS, KubernetesApi, Obj
from k8s_backend.local.images import default_spark_image
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.node, pytest.mark.timeout(1500)]

MISSING_IMAGE = "docker.io/k8s-backend/never-built-here:0"
FINALIZER = "k8s-backend.io/contract-test"
# Grows by 8 MiB every 50 ms (bytes written, so resident) until something kills it.
GROW = "import time\nchunks = []\nwhile True:\n    chunks.append(b'x' * (8 << 20))\n    time.sleep(0.05)"
# Waits for SIGTERM without blocking it in a foreground command (bash runs traps between commands).
WAIT_FOR_TERM = "while true; do sleep 1 & wait $!; done"
# The trap tells by its exit code whether the preStop hook ran before SIGTERM: 0 if its mark exists.
CHECK_MARK_ON_TERM = 'on_term() { if [ -e "$MARK" ]; then exit 0; fi; exit 7; }; trap on_term TERM; '


@attrs.frozen
class Case:
    """One pod run on both kubelets. ``expect`` is what the real kubelet reports (state, reason, exit
    code): it keeps the case honest, so that both kubelets failing alike cannot pass for agreement."""

    name: str
    container: Obj
    expect: tuple[str, str, int | None]
    settle_event: str  # the last Event a kubelet records in this case: waited for (bounded) before reading
    delete_grace: int | None = None  # deleted with this grace period once its container runs
    image: str | None = None  # None: the cluster's Spark image
    volumes: tuple[Obj, ...] = ()

    def pod(self, spark_image: str) -> Obj:
        container = {"name": "main", "image": self.image or spark_image, "imagePullPolicy": "Never"}
        meta: Obj = {"name": self.name}
        if self.delete_grace is not None:
            meta["finalizers"] = [FINALIZER]
        spec: Obj = {
            "restartPolicy": "Never",
            "containers": [{**container, **self.container}],
            "volumes": list(self.volumes),
        }
        return {"metadata": meta, "spec": spec}

    def settled(self, pod: Obj) -> bool:
        state = container_state(pod)
        if self.expect[0] == "waiting":
            return (state.get("waiting") or {}).get("reason") not in (None, "ContainerCreating")
        if self.expect[1] == "StartError" and "running" in state:
            return True  # it should never have started: no need to wait for its end
        phase = (pod.get("status") or {}).get("phase")
        return "terminated" in state and phase in ("Succeeded", "Failed")


def bash(script: str) -> list[str]:
    return ["bash", "-c", script]


CASES = (
    Case("success", {"command": bash("echo done")}, ("terminated", "Completed", 0), "Started"),
    Case("exit-1", {"command": bash("exit 1")}, ("terminated", "Error", 1), "Started"),
    Case(
        "oom",
        {
            "command": ["python3", "-c", GROW],
            "resources": {"limits": {"memory": "64Mi"}, "requests": {"memory": "64Mi"}},
        },
        ("terminated", "OOMKilled", 137),
        "Started",
    ),
    Case(
        "missing-image",
        {"command": bash("true")},
        ("waiting", "ErrImageNeverPull", None),
        "Failed",
        image=MISSING_IMAGE,
    ),
    Case(
        "bad-command",
        {"command": ["no-such-executable-k8s-backend"]},
        ("terminated", "StartError", 128),
        "Failed",
    ),
    Case(
        "graceful-deletion",
        {"command": bash(f"trap 'exit 0' TERM; {WAIT_FOR_TERM}")},
        ("terminated", "Completed", 0),
        "Killing",
        delete_grace=30,
    ),
    Case(
        "pre-stop",
        {
            "command": bash(CHECK_MARK_ON_TERM + WAIT_FOR_TERM),
            "env": [{"name": "MARK", "value": "/scratch/pre-stop-ran"}],
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
            "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", 'touch "$MARK"']}}},
        },
        ("terminated", "Completed", 0),
        "Killing",
        delete_grace=30,
        volumes=({"name": "scratch", "emptyDir": {}},),
    ),
)

# (case, field) -> why the process kubelet reports otherwise. Asserted exactly: fix one, remove its line.
IDLES = "a program not on this machine may be in the image: the process kubelet's container idles (Running)"
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {
    ("bad-command", "phase"): IDLES,
    ("bad-command", "state"): IDLES,
    ("bad-command", "reason"): IDLES,
    ("bad-command", "exit_code"): IDLES,
    ("bad-command", "events"): "its idling container was Started, where the runtime's start Failed",
}

# Events about the node's configuration, not the pod: the real node here runs no cluster DNS (a real
# cluster's nodes do), so its kubelet warns MissingClusterDNS for every ClusterFirst pod and falls back to
# the node's resolver. The process kubelet's pods use this machine's resolver too, without a word.
NODE_CONFIGURATION_EVENTS = frozenset({"MissingClusterDNS"})


@attrs.frozen
class Observation:
    """What a kubelet reported about one pod, without what legitimately differs."""

    phase: str
    state: str  # terminated, waiting, running or none
    reason: str
    exit_code: int | None
    events: frozenset[str]


def container_state(pod: Obj) -> Obj:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return dict(statuses[0].get("state") or {}) if statuses else {}


def observe(pod: Obj, events: frozenset[str]) -> Observation:
    state = container_state(pod)
    kind = next(iter(state), "none")
    detail = state.get(kind) or {}
    return Observation(
        phase=str((pod.get("status") or {}).get("phase", "")),
        state=kind,
        reason=str(detail.get("reason", "")),
        exit_code=detail.get("exitCode"),
        events=events - NODE_CONFIGURATION_EVENTS,
    )


def differences(process: Observation, real: Observation) -> dict[str, tuple[Any, Any]]:
    """field -> (process kubelet's value, real kubelet's value), for the fields that differ."""
    ours, theirs = attrs.asdict(process), attrs.asdict(real)
    return {field: (ours[field], theirs[field]) for field in ours if ours[field] != theirs[field]}


def pod_events(api: KubernetesApi) -> dict[str, set[str]]:
    """Pod name -> the reasons of the Events recorded about it."""
    reasons: dict[str, set[str]] = {}
    for event in api.list(EVENTS, "default").items:
        involved = event.get("involvedObject") or {}
        if involved.get("kind") == "Pod":
            reasons.setdefault(str(involved.get("name")), set()).add(str(event.get("reason")))
    return reasons


def observe_all(
    cluster: LocalCluster, spark_image: str, timeout: float, events_written: Callable[[], bool] | None
) -> dict[str, Observation]:
    """Run every case at once on ``cluster``; each case's observation once it settled (or timed out:
    a kubelet that never gets there shows in the comparison). ``events_written`` waits until the
    kubelet's Events are written; without it, until each case's ``settle_event`` is there (bounded)."""
    api = cluster.api()
    for case in CASES:
        api.create(PODS, "default", case.pod(spark_image))
    deleted: set[str] = set()

    def progressed() -> bool:
        pods = {p["metadata"]["name"]: p for p in api.list(PODS, "default").items}
        for case in CASES:
            if (
                case.delete_grace is not None
                and case.name not in deleted
                and "running" in container_state(pods[case.name])
            ):
                api.delete(PODS, "default", case.name, grace_period_seconds=case.delete_grace)
                deleted.add(case.name)
        return all(c.settled(pods[c.name]) for c in CASES)

    wait_for(progressed, timeout)
    if events_written is not None:
        events_written()
    else:
        wait_for(lambda: all(c.settle_event in pod_events(api).get(c.name, set()) for c in CASES), 60)
    reasons = pod_events(api)
    pods = {p["metadata"]["name"]: p for p in api.list(PODS, "default").items}
    for name in deleted:
        api.patch(PODS, "default", name, {"metadata": {"finalizers": None}})
    return {c.name: observe(pods[c.name], frozenset(reasons.get(c.name, ()))) for c in CASES}


@pytest.fixture(scope="module")
def process_kubelet() -> dict[str, Observation]:
    """The cases on the process kubelet (on the real control plane); the Spark image is the one image
    it has, as the real node has its own."""
    why = node_missing()
    if why is not None:
        pytest.skip(why)
    image = default_spark_image()
    with LocalCluster(control_plane="kubernetes", known_images=[image]) as cluster:
        recorder = cluster.kubelet.events
        assert recorder is not None
        return observe_all(cluster, image, 120, recorder.wait_idle)


@pytest.fixture(scope="module")
def real_kubelet(process_kubelet: dict[str, Observation]) -> dict[str, Observation]:
    """The cases on the real node (kubelet, containerd, runc), once the process kubelet's cluster is gone."""
    with LocalCluster(control_plane="kubernetes", runtime="containers") as cluster:
        image = cluster.spark_conf()["spark.kubernetes.container.image"]
        return observe_all(cluster, image, 300, None)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_real_kubelet_reports_what_the_case_is_about(
    case: Case, real_kubelet: dict[str, Observation]
) -> None:
    seen = real_kubelet[case.name]
    assert (seen.state, seen.reason, seen.exit_code) == case.expect, seen


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_process_kubelet_reports_what_the_real_one_does(
    case: Case, process_kubelet: dict[str, Observation], real_kubelet: dict[str, Observation]
) -> None:
    found = differences(process_kubelet[case.name], real_kubelet[case.name])
    known = {field for name, field in KNOWN_DIFFERENCES if name == case.name}
    assert set(found) == known, (
        f"{case.name}: (process kubelet, real kubelet) differ in {found}; known differences: {sorted(known)}"
    )
