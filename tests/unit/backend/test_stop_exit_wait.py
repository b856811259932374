"""At stop, executors the driver told to stop get a moment to exit by themselves before their pods go."""

from __future__ import annotations

from typing import Any

from backend_harness import make_harness

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.conf.model import LifecycleConf
from k8s_backend.kube.port import PODS
from k8s_backend.lifecycle.executor_ops import ExecutorOperations
from k8s_backend.testing import FakeKubernetes

SELECTOR_LABELS = {"spark-app-selector": "app", "spark-role": "executor", "spark-exec-id": "1"}


def _running_executor(fake: FakeKubernetes) -> None:
    body = {
        "metadata": {"name": "exec-1", "labels": SELECTOR_LABELS},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    fake.create(PODS, "default", body)
    fake.patch_status(PODS, "default", "exec-1", {"phase": "Running"})


def _ops(fake: FakeKubernetes) -> ExecutorOperations:
    clock = ManualClock()
    return ExecutorOperations(
        fake,
        DeterministicScheduler(clock),
        clock,
        namespace="default",
        app_id="app",
        lifecycle=LifecycleConf(delete_grace_period=5.0, decommission_label=None),
    )


def test_the_wait_ends_as_soon_as_no_executor_runs() -> None:
    fake = FakeKubernetes()
    _running_executor(fake)
    original = fake.list
    calls: list[int] = []

    def list_then_exit(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # the executor exits between two looks
            fake.patch_status(PODS, "default", "exec-1", {"phase": "Succeeded"})
        return original(*args, **kwargs)

    fake.list = list_then_exit  # type: ignore[method-assign]
    assert _ops(fake).wait_for_executors_to_exit(30.0)
    assert len(calls) == 2


def test_the_wait_gives_up_at_its_timeout() -> None:
    fake = FakeKubernetes()
    _running_executor(fake)
    assert not _ops(fake).wait_for_executors_to_exit(0.0)


def test_stop_lets_executors_exit_before_deleting_their_pods_when_a_driver_is_attached() -> None:
    h = make_harness({"spark.kubernetes.executor.stopExitWait": "1s"})
    h.backend.start()
    h.run()
    h.backend.stop()
    done = h.backend.parts.stop_sequence.completed
    assert done.index("let the executors exit") < done.index("delete the executor pods")


def test_without_a_driver_pods_are_deleted_at_once() -> None:
    h = make_harness({"spark.kubernetes.executor.stopExitWait": "1s"}, driver=False)
    h.backend.start()
    h.run()
    h.backend.stop()
    assert "let the executors exit" not in h.backend.parts.stop_sequence.completed


def test_the_wait_can_look_at_a_view_instead_of_listing() -> None:
    fake = FakeKubernetes()
    _running_executor(fake)
    looks = iter([2, 1, 0])
    calls_before = len(fake.calls)
    assert _ops(fake).wait_for_executors_to_exit(30.0, lambda: next(looks), pause=0.001)
    assert len(fake.calls) == calls_before  # no request


def test_a_view_that_never_empties_is_given_up_on_after_the_timeout() -> None:
    fake = FakeKubernetes()
    assert not _ops(fake).wait_for_executors_to_exit(0.0, lambda: 1, pause=0.001)
