"""Before allocating, the backend waits (briefly) for the driver pod to be Ready (SPARK-32975)."""

from __future__ import annotations

from typing import Any

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.conf.model import LifecycleConf
from k8s_backend.kube.port import PODS
from k8s_backend.lifecycle.executor_ops import ExecutorOperations
from k8s_backend.testing import FakeKubernetes


def _driver(fake: FakeKubernetes, ready: bool) -> None:
    fake.create(
        PODS,
        "default",
        {"metadata": {"name": "driver"}, "spec": {"containers": [{"name": "d", "image": "x"}]}},
    )
    status: dict[str, Any] = {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}
    fake.patch_status(PODS, "default", "driver", status)


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


def test_a_ready_driver_needs_no_watch() -> None:
    fake = FakeKubernetes(watch_blocking=False)
    _driver(fake, ready=True)
    assert _ops(fake).wait_for_driver_ready("driver", 1.0)
    assert not fake.calls_of("watch", PODS)


def test_a_driver_that_becomes_ready_is_waited_for_through_a_watch() -> None:
    fake = FakeKubernetes(watch_blocking=False)
    _driver(fake, ready=False)
    ops = _ops(fake)
    original = fake.watch

    def watch_then_ready(*args: Any, **kwargs: Any) -> Any:
        fake.patch_status(
            PODS,
            "default",
            "driver",
            {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        )
        return original(*args, **kwargs)

    fake.watch = watch_then_ready  # type: ignore[method-assign]
    assert ops.wait_for_driver_ready("driver", 1.0)


def test_a_missing_or_unready_driver_only_delays_allocation() -> None:
    fake = FakeKubernetes(watch_blocking=False)
    _driver(fake, ready=False)
    assert not _ops(fake).wait_for_driver_ready("driver", 1.0)
    assert not _ops(fake).wait_for_driver_ready("ghost", 1.0)
