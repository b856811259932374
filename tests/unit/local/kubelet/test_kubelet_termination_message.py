"""``terminationMessagePolicy: FallbackToLogsOnError``: a failed container's log tail becomes its
termination message, as a real kubelet writes it; without the policy, or on success, there is none."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubelet_support import python_pod, wait_phase

from k8s_backend.kube.port import PODS
from k8s_backend.local.kubelet import ProcessKubelet
from k8s_backend.local.kubelet.runtime import log_tail
from k8s_backend.testing import FakeKubernetes

FAIL = "\n".join(
    (
        "import sys",
        "for i in range(100): print('line', i)",
        "sys.stdout.flush()",  # stdout to a file is block-buffered: keep the lines before the error
        "print('ValueError: bad input', file=sys.stderr)",
        "sys.exit(2)",
    )
)


def terminated(fake: FakeKubernetes, name: str) -> dict:  # type: ignore[type-arg]
    return fake.get(PODS, "default", name)["status"]["containerStatuses"][0]["state"]["terminated"]


def with_policy(name: str, code: str, policy: str | None) -> dict:  # type: ignore[type-arg]
    pod = python_pod(name, code)
    if policy is not None:
        pod["spec"]["containers"][0]["terminationMessagePolicy"] = policy
    return pod


def test_a_failed_container_gets_the_end_of_its_log_as_message(
    fake: FakeKubernetes, kubelet: ProcessKubelet
) -> None:
    fake.create(PODS, "default", with_policy("fails", FAIL, "FallbackToLogsOnError"))
    wait_phase(kubelet, fake, "fails", "Failed")
    message = terminated(fake, "fails")["message"]
    assert message.splitlines()[-1] == "ValueError: bad input"
    assert len(message.splitlines()) == 80  # the kubelet's 80-line bound (2048 bytes is not reached)
    assert "line 0" not in message


@pytest.mark.parametrize(("policy", "code"), [(None, FAIL), ("FallbackToLogsOnError", "print('fine')")])
def test_no_message_without_the_policy_or_on_success(
    fake: FakeKubernetes, kubelet: ProcessKubelet, policy: str | None, code: str
) -> None:
    fake.create(PODS, "default", with_policy("p", code, policy))
    wait_phase(kubelet, fake, "p", "Failed" if policy is None else "Succeeded")
    assert "message" not in terminated(fake, "p")


def test_the_tail_is_bounded_by_bytes_too(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text("x" * 5000 + "\nlast\n")
    tail = log_tail(log)
    assert tail.endswith("last") and len(tail.encode()) <= 2048
    assert log_tail(tmp_path / "missing.log") == ""
