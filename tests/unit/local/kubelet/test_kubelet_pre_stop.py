"""What the process kubelet does where the real kubelet was its judge (tests/node's kubelet contract):
preStop hooks before SIGTERM on deletion, and ``imagePullPolicy: Never`` for an image that is not here."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_support import PY, ReadySignal, container_state, python_pod, wait_for, wait_gone

from k8s_backend.kube.port import EVENTS, PODS, Obj
from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.local.kubelet.hooks import MINIMUM_GRACE_SECONDS, remaining_grace
from k8s_backend.testing import FakeKubernetes

# The container's SIGTERM handler tells by its exit code whether the hook had run before it: 0 if the
# hook's marker file (in the working directory both share) exists, 7 if not. os._exit, because a
# SystemExit raised while the readiness signal's file is being closed would be swallowed.
TRAP_TERM = (
    "import os, signal\n"
    "signal.signal(signal.SIGTERM, lambda *_: os._exit(0 if os.path.exists('prestop-ran') else 7))"
)


@pytest.fixture
def ready(tmp_path: Path) -> Iterator[ReadySignal]:
    signal_ = ReadySignal(tmp_path)
    yield signal_
    signal_.close()


def with_pre_stop(pod: Obj, command: list[str]) -> Obj:
    pod["spec"]["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": command}}}
    return pod


def reasons(fake: FakeKubernetes, kubelet: ProcessKubelet, pod: str) -> list[str]:
    assert kubelet.events is not None and kubelet.events.wait_idle()
    return sorted(
        e["reason"] for e in fake.list(EVENTS, "default").items if e["involvedObject"]["name"] == pod
    )


def last_exit(fake: FakeKubernetes, kubelet: ProcessKubelet, name: str) -> int:
    """Delete the pod (its grace period is the pod's) and return its container's exit code."""
    since = fake.resource_version
    fake.delete(PODS, "default", name)
    wait_gone(kubelet, fake, name)
    stream = fake.watch(PODS, "default", resource_version=since, timeout_seconds=1)
    try:
        codes = [
            s["state"]["terminated"]["exitCode"]
            for event in stream
            for s in (event.object.get("status") or {}).get("containerStatuses") or []
            if "terminated" in s["state"]
        ]
    finally:
        stream.close()
    assert codes, f"pod {name} never reported a terminated container"
    return int(codes[-1])


def test_the_pre_stop_hook_runs_before_sigterm(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    hook = [PY, "-c", "open('prestop-ran', 'w').close()"]
    fake.create(PODS, "default", with_pre_stop(python_pod("hooked", ready.code(TRAP_TERM), grace=30), hook))
    ready.wait()
    assert last_exit(fake, kubelet, "hooked") == 0
    assert "FailedPreStopHook" not in reasons(fake, kubelet, "hooked")


def test_a_failing_pre_stop_hook_is_an_event_and_the_container_is_stopped_anyway(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    hook = [PY, "-c", "print('no luck'); raise SystemExit(3)"]
    fake.create(PODS, "default", with_pre_stop(python_pod("failing", ready.code(TRAP_TERM), grace=30), hook))
    ready.wait()
    assert last_exit(fake, kubelet, "failing") == 7
    assert "FailedPreStopHook" in reasons(fake, kubelet, "failing")
    failed = [e for e in fake.list(EVENTS, "default").items if e["reason"] == "FailedPreStopHook"]
    assert "exited with 3" in failed[0]["message"] and "no luck" in failed[0]["message"]
    assert failed[0]["type"] == "Warning"


def test_a_hook_whose_program_is_not_on_this_machine_is_skipped(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    # The Spark image's /opt/decom.sh: the image's files are unknown here, so nothing runs and the
    # container gets SIGTERM at once.
    hook = ["/opt/no-such-dir-here/decom.sh"]
    fake.create(PODS, "default", with_pre_stop(python_pod("skipped", ready.code(TRAP_TERM), grace=30), hook))
    ready.wait()
    assert last_exit(fake, kubelet, "skipped") == 7
    assert "FailedPreStopHook" not in reasons(fake, kubelet, "skipped")


def test_a_hook_that_outlives_the_grace_period_is_killed_and_reported(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    hook = [PY, "-c", "import time; time.sleep(120)"]
    fake.create(PODS, "default", with_pre_stop(python_pod("slow-hook", ready.code(TRAP_TERM), grace=1), hook))
    ready.wait()
    assert last_exit(fake, kubelet, "slow-hook") == 7
    failed = events_of(fake, "FailedPreStopHook")
    assert failed and "did not end within the grace period of 1 s" in failed[0]["message"]
    assert kubelet.wait_until(lambda: kubelet.processes() == [])


def test_a_sleep_hook_delays_sigterm(
    fake: FakeKubernetes, kubelet: ProcessKubelet, ready: ReadySignal
) -> None:
    pod = python_pod("sleeper", ready.code(TRAP_TERM), grace=30)
    pod["spec"]["containers"][0]["lifecycle"] = {"preStop": {"sleep": {"seconds": 1}}}
    fake.create(PODS, "default", pod)
    ready.wait()
    started = time.monotonic()
    assert last_exit(fake, kubelet, "sleeper") == 7
    assert time.monotonic() - started >= 1.0  # SIGTERM came after the hook's second, not at once


def test_sigterm_gets_what_the_hook_left_of_the_grace_period_but_at_least_two_seconds() -> None:
    assert remaining_grace(30.0, 5.0) == 25.0
    assert remaining_grace(30.0, 29.5) == MINIMUM_GRACE_SECONDS
    assert remaining_grace(1.0, 0.0) == MINIMUM_GRACE_SECONDS


def test_an_image_that_is_not_here_with_pull_policy_never_is_err_image_never_pull(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    images = ImagePolicy(["spark:1"], backoff_initial=0.3, backoff_max=0.6)  # pauses: Events get written
    with ProcessKubelet(fake, work_dir=tmp_path, nodes=[Node.of("node-1")], images=images) as kubelet:
        pod = python_pod("never", "pass", image="nope:1")
        pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
        fake.create(PODS, "default", pod)
        assert kubelet.wait_until(lambda: "waiting" in container_state(fake, "never"))
        waiting = container_state(fake, "never")["waiting"]
        assert waiting == {
            "reason": "ErrImageNeverPull",
            "message": 'Container image "nope:1" is not present with pull policy of Never',
        }
        # Tried again (as a kubelet's pod sync is), never pulled: no Pulling, no ErrImagePull.
        assert wait_for(lambda: sum(e.get("count", 1) for e in events_of(fake, "ErrImageNeverPull")) >= 3)
        assert set(reasons(fake, kubelet, "never")) == {"Scheduled", "ErrImageNeverPull", "Failed"}
        assert [e["message"] for e in events_of(fake, "Failed")] == ["Error: ErrImageNeverPull"]
        assert fake.get(PODS, "default", "never")["status"]["phase"] == "Pending"


def events_of(fake: FakeKubernetes, reason: str) -> list[Obj]:
    return [e for e in fake.list(EVENTS, "default").items if e["reason"] == reason]
