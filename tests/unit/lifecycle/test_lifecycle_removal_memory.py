"""The removed-executors memory: bounded by the cache timeout, and a failed driver call is retried."""

from __future__ import annotations

from lifecycle_fixtures import SPARK_CONTAINER, Remembering, batch, failed_pod, pod

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.lifecycle.decisions import LifecycleDecider, RemoveFromDriver
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.manager import ExecutorPodsLifecycleManager
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes


def _decider() -> LifecycleDecider:
    return LifecycleDecider(container_name=SPARK_CONTAINER, removed_cache_timeout=180.0)


def _remembering() -> Remembering:
    return Remembering(_decider())


def test_a_removed_executor_is_forgotten_after_the_cache_timeout_once_its_pod_is_gone() -> None:
    decider = _remembering()
    decider.decide(batch(failed_pod(1)), {}, now=1000.0)
    assert decider.is_removed(1)
    decider.decide(batch(view=[]), {}, now=1100.0)
    assert decider.is_removed(1), "still within the cache timeout"
    decider.decide(batch(view=[]), {}, now=1000.0 + 181.0)
    assert not decider.is_removed(1)


def test_a_removed_executor_whose_pod_is_still_there_is_remembered() -> None:
    decider = _remembering()
    decider.decide(batch(failed_pod(1)), {}, now=1000.0)
    decider.decide(batch(view=[failed_pod(1)]), {}, now=2000.0)
    assert decider.is_removed(1)


class _FlakyDriver:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        self.calls.append(executor_id)
        if len(self.calls) == 1:
            raise ConnectionError("the driver is busy")

    def disable_executor(self, executor_id: str) -> None:
        pass

    def registered_executors(self) -> dict[str, float]:
        return {}


def test_a_failed_removal_is_reported_again_when_the_pod_is_deleted() -> None:
    clock = ManualClock(1000.0)
    scheduler = DeterministicScheduler(clock)
    driver = _FlakyDriver()
    decider = _decider()
    manager = ExecutorPodsLifecycleManager(
        FakeKubernetes(clock=clock),
        ExecutorPodsSnapshotsStore(scheduler, clock),
        clock,
        namespace="default",
        decider=decider,
        driver=driver,
    )
    manager.on_new_snapshots(batch(failed_pod(1)))
    assert driver.calls == ["1"] and not manager.memory.is_removed(1)
    decision = decider.decide(batch(pod(1, "Failed", deleted=True)), {}, now=1001.0, memory=manager.memory)
    assert [type(a) for a in decision.actions] == [RemoveFromDriver]
    # And the manager does exactly that: the driver hears of it a second time.
    manager.on_new_snapshots(batch(pod(1, "Failed", deleted=True)))
    assert driver.calls == ["1", "1"] and manager.memory.is_removed(1)
