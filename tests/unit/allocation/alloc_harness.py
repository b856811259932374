"""An allocator wired to FakeKubernetes, a real snapshot store, a manual clock and a deterministic
scheduler: tests drive rounds and pod states by hand and assert on the API traffic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend.allocation.allocator import (
    AllocatorIdentity,
    AllocatorListeners,
    AllocatorSettings,
    ExecutorPodsAllocator,
    PodSpecBuilder,
)
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.common.failure_sink import FailureSink
from k8s_backend.conf.model import (
    AllocationConf,
    DriverConf,
    ExecutorPodConf,
    KubernetesConf,
    ResourceProfile,
    ScalingConf,
)
from k8s_backend.kube.port import PODS, Obj
from k8s_backend.memkube.api import Call
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore, SubscriberCallback, Subscription
from k8s_backend.testing import FakeKubernetes

APP = "spark-app-id"
NS = "default"
PREFIX = "spark"
START = 1_000_000.0
BATCH = 5
IDLE_TIMEOUT = 10.0
EXECUTORS = f"spark-app-selector={APP},spark-role=executor"
RP = ResourceProfile(id=1, cores=4, memory_mib=2048, task_cpus=2)


def suite_conf(**groups: Any) -> KubernetesConf:
    """Spark's suite conf: driver pod name set, idle timeout 10 s (batch size 5, as the suite assumed)."""
    conf = KubernetesConf(
        app_id=APP,
        allocation=AllocationConf(batch_size=BATCH),
        scaling=ScalingConf(executor_idle_timeout=IDLE_TIMEOUT),
        driver=DriverConf(pod_name="driver"),
        executor=ExecutorPodConf(image="spark:4.3.0"),
    )
    return attrs.evolve(conf, **groups)


def selector(*ids: int) -> str:
    return f"{EXECUTORS},spark-exec-id in ({','.join(str(i) for i in ids)})"


class ManualRoundsStore(ExecutorPodsSnapshotsStore):
    """The real store, but rounds run only when a test asks (as Spark's deterministic store): moving the
    clock alone never runs a round."""

    def add_subscriber(self, interval: float, callback: SubscriberCallback) -> Subscription:
        self.intervals.append(interval)
        return super().add_subscriber(1e12, callback)

    @property
    def intervals(self) -> list[float]:
        if not hasattr(self, "_intervals"):
            self._intervals: list[float] = []
        return self._intervals


class Harness:
    """One allocator under test. ``known`` is the set of executor ids the driver has registered.

    With ``periodic`` the store runs rounds at the allocator's interval as the scheduler's clock moves;
    otherwise only :meth:`round` (and the immediate round of a new target) runs one. ``store_type``
    replaces the store (by default chosen by ``periodic``).
    """

    def __init__(
        self,
        conf: KubernetesConf | None = None,
        *,
        builder: PodSpecBuilder | None = None,
        with_driver_pod: bool = True,
        start: bool = True,
        periodic: bool = False,
        store_type: type[ExecutorPodsSnapshotsStore] | None = None,
    ) -> None:
        self.conf = conf or suite_conf()
        self.clock = ManualClock(START)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = FakeKubernetes(clock=self.clock, watch_blocking=False, seed=7)
        if store_type is None:
            store_type = ExecutorPodsSnapshotsStore if periodic else ManualRoundsStore
        self.store = store_type(self.scheduler, self.clock)
        self.known: set[int] = set()
        self.failures: list[str] = []
        self.driver_pod: Obj | None = None
        if with_driver_pod:
            self.driver_pod = self.fake.create(PODS, NS, _driver_pod_body())
        self.builder = builder or ExecutorPodBuilder(self.conf, facts=DriverFacts(spark_user="spark"))
        self.failure_sink = FailureSink()
        self.failure_sink.add_listener(self.failures.append)
        self.allocator = ExecutorPodsAllocator(
            AllocatorSettings.from_conf(self.conf),
            AllocatorIdentity(
                app_id=APP,
                driver_url="spark://CoarseGrainedScheduler@driver-svc:7078",
                pod_name_prefix=PREFIX,
                driver_pod=self.driver_pod,
            ),
            self.fake,
            self.builder,
            self.store,
            self.clock,
            listeners=AllocatorListeners(known_executor_ids=lambda: frozenset(self.known)),
            failures=self.failure_sink,
            scheduler=self.scheduler,
        )
        if start:
            self.start()

    def start(self) -> None:
        self.allocator.start()
        self.scheduler.run_until_idle()  # the subscriber's first, empty delivery
        self.fake.reset_calls()

    # -- driving ---------------------------------------------------------------------------------------

    def set_targets(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> None:
        """Spark's setTotalExpectedExecutors; the immediate round it may trigger runs now."""
        self.allocator.set_total_expected_executors(targets, profiles)
        self.scheduler.run_until_idle()

    def round(self) -> None:
        """Spark's snapshotsStore.notifySubscribers(): one allocation round now."""
        self.store.notify_subscribers()
        self.scheduler.run_until_idle()

    def advance(self, seconds: float) -> None:
        """Move time without running a round (Spark's ManualClock.advance)."""
        self.clock.advance(seconds)

    def mark(self, executor_id: int, phase: str, **status: Any) -> Obj:
        """Give the executor's pod a phase on the fake cluster; the store observes it (a watch event)."""
        pod = self.fake.patch_status(PODS, NS, pod_name(executor_id), {"phase": phase, **status})
        self.store.update_pod(pod)
        return pod

    def fail(self, executor_id: int) -> Obj:
        terminated = {"terminated": {"exitCode": 1, "reason": "Error"}}
        return self.mark(
            executor_id,
            "Failed",
            containerStatuses=[{"name": "spark-kubernetes-executor", "state": terminated}],
        )

    def vanish(self, executor_id: int) -> None:
        """The pod is deleted on the cluster and the store sees the deletion."""
        pod = self.fake.get(PODS, NS, pod_name(executor_id))
        self.fake.delete(PODS, NS, pod_name(executor_id))
        self.store.update_pod(pod, deleted=True)

    def resync(self) -> None:
        """A full list from the fake cluster replaces the store's view (the polling source)."""
        listed = self.fake.list(PODS, NS, label_selector=EXECUTORS)
        self.store.replace_snapshot(listed.items, listed.resource_version)

    # -- observing -------------------------------------------------------------------------------------

    def _executor_creates(self) -> list[dict[str, str]]:
        labels = [c.body["metadata"].get("labels") or {} for c in self.fake.calls_of("create", PODS)]
        return [lab for lab in labels if "spark-exec-id" in lab]

    def created_ids(self) -> list[int]:
        """Executor ids of the pod creations asked for, in order (failed ones included)."""
        return [int(lab["spark-exec-id"]) for lab in self._executor_creates()]

    def created_profiles(self) -> dict[int, int]:
        """Executor id -> resource profile id of every pod creation asked for."""
        return {
            int(lab["spark-exec-id"]): int(lab["spark-exec-resourceprofile-id"])
            for lab in self._executor_creates()
        }

    def pod_deletes(self) -> list[Call]:
        return self.fake.calls_of("delete_collection", PODS)

    def existing_ids(self) -> set[int]:
        return {
            int(p["metadata"]["labels"]["spark-exec-id"])
            for p in self.fake.objects(PODS, NS)
            if p["metadata"]["labels"].get("spark-role") == "executor"
        }

    @property
    def outstanding(self) -> int:
        return self.allocator.outstanding_pods


def pod_name(executor_id: int) -> str:
    return f"{PREFIX}-exec-{executor_id}"


def _driver_pod_body() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "driver", "labels": {"spark-app-selector": APP, "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark:4.3.0"}]},
    }
