"""OOM-aware replacements, the pure part: which pods were OOM-killed, and the raise per OOM with its bound."""

from __future__ import annotations

import pytest
from lifecycle_fixtures import pod, running, state, terminated

from k8s_backend.lifecycle.oom import OomBoosts, OomSettings, oom_killed

CONTAINER = "spark-kubernetes-executor"
ON = OomSettings(factor=1.5, max_factor=2.0)


def ended(exec_id: int, code: int, reason: str, phase: str = "Failed") -> object:
    return state(pod(exec_id, phase, containers=[terminated(CONTAINER, code, reason)]))


@pytest.mark.parametrize(
    ("code", "reason", "phase", "expected"),
    [
        (137, "OOMKilled", "Failed", True),
        (137, "Error", "Failed", False),  # SIGKILL for another reason
        (1, "OOMKilled", "Failed", False),
    ],
)
def test_only_exit_137_with_reason_oomkilled_of_an_ended_pod_is_an_oom_kill(
    code: int, reason: str, phase: str, expected: bool
) -> None:
    assert oom_killed(ended(1, code, reason, phase), CONTAINER) is expected  # type: ignore[arg-type]


def test_a_running_executor_is_no_oom_kill() -> None:
    assert not oom_killed(state(pod(1, "Running", containers=[running(CONTAINER)])), CONTAINER)


def test_each_oom_multiplies_the_overhead_up_to_the_bound() -> None:
    boosts = OomBoosts()
    assert boosts.overhead_mib(0, 384, ON) == 384
    boosts, first = boosts.after_oom(1, 0, 384, ON)
    assert first is not None and (first.ooms, first.factor, first.overhead_mib) == (1, 1.5, 576)
    assert "raised from 384 MiB to 576 MiB (x1.5 after 1 OOM kill)" in first.describe()
    boosts, second = boosts.after_oom(2, 0, 384, ON)
    assert second is not None and (second.factor, second.overhead_mib) == (2.0, 768), "x2.25 bounded at x2"
    assert boosts.overhead_mib(0, 384, ON) == 768
    assert boosts.overhead_mib(1, 500, ON) == 500, "other profiles keep theirs"


def test_an_executor_counts_once_and_nothing_is_raised_when_off() -> None:
    boosts, _ = OomBoosts().after_oom(1, 0, 384, ON)
    again, raised = boosts.after_oom(1, 0, 384, ON)
    assert raised is None and again is boosts
    off = OomSettings()
    assert not off.enabled
    same, raised = OomBoosts().after_oom(1, 0, 384, off)
    assert raised is None and same.overhead_mib(0, 384, off) == 384
