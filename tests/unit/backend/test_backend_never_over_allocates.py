"""'Never more executor pods than the target': a stateful property-based test over the whole backend.

Hypothesis interleaves target changes, kills, decommissions, registrations, pod deletions and failures,
watch drops and relists (410), create errors and creates that reach the server but time out in the
client, with time moving on the manual clock; the backend runs on the in-memory API with the
deterministic scheduler. Checked:

- at every create, the live executor pods (not terminating, not ended) are fewer than the target: the
  allocator never creates a pod it may not have;
- after every step, the live pods are at most the target, or at most the live pods that were already
  there when the target was last lowered (running pods are never taken away: the driver kills them);
- once the operations stop, the faults are cleared and the driver kills what is above the target, the
  live pods converge to exactly the target.

Every create's reason is in the executor histories, and a failure prints them, so a run that breaks the
rule can be explained. The fast tier runs a bounded number of examples; ``-m slow`` runs many more.
"""

from __future__ import annotations

from typing import Any

import pytest
from backend_harness import BASE_CONF, START, RecordingDriver, create_backend
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.labels import SPARK_EXECUTOR_ID_LABEL
from k8s_backend.kube.port import PODS, ApiConnectionError, Obj, Resource
from k8s_backend.testing import FakeKubernetes

CONF = {
    **BASE_CONF,
    "spark.executor.instances": "2",
    "spark.kubernetes.allocation.batch.size": "3",
    "spark.kubernetes.allocation.batch.delay": "1s",
    "spark.kubernetes.executor.apiPollingInterval": "5s",
    "spark.kubernetes.dynamicAllocation.deleteGracePeriod": "2s",
    "spark.executor.maxNumFailures": "100000",  # failures are injected on purpose
}
LIVE_PHASES = (None, "Pending", "Running", "Unknown")
INDEX = st.integers(min_value=0, max_value=3)  # which live pod a rule acts on, newest first


def is_executor(body: Obj) -> bool:
    return ((body.get("metadata") or {}).get("labels") or {}).get("spark-role") == "executor"


class CheckedFake(FakeKubernetes):
    """The in-memory API, checking every executor pod create against the target, and able to make a
    create reach the server but time out in the client (a slow create)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock, watch_blocking=False)
        self.target = 0
        self.slow_creates = 0
        self.over: list[str] = []  # what broke the rule, for the failure message

    def live_executor_pods(self) -> list[Obj]:
        return [
            p
            for p in self.objects(PODS, "default")
            if is_executor(p)
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") in LIVE_PHASES
        ]

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        if resource == PODS and is_executor(body):
            live = self.live_executor_pods()
            name = body["metadata"]["name"]
            exists = any(p["metadata"]["name"] == name for p in self.objects(PODS, "default"))
            # A create asked again under the same name after a timeout finds its pod (409): no new pod.
            if not exists and len(live) >= self.target:
                names = sorted(p["metadata"]["name"] for p in live)
                self.over.append(f"created {name} with {names} live, target {self.target}")
        created = super().create(resource, namespace, body)
        if resource == PODS and is_executor(body) and self.slow_creates > 0:
            self.slow_creates -= 1
            raise ApiConnectionError("read timed out (the create reached the server)")
        return created


class NeverOverAllocates(RuleBasedStateMachine):
    """The backend, the API and the faults; the rules are what the driver and the cluster do."""

    @initialize()
    def start(self) -> None:
        self.clock = ManualClock(START)
        self.scheduler = DeterministicScheduler(self.clock)
        self.fake = CheckedFake(self.clock)
        self.driver = RecordingDriver()
        self.backend = create_backend(
            CONF, api=self.fake, driver=self.driver, clock=self.clock, scheduler=self.scheduler
        )
        self.target = 2
        self.fake.target = 2
        self.kept: set[str] = set()  # live when the target was last lowered: never taken away
        self.backend.start()
        self.scheduler.run_until_idle()

    # -- helpers ---------------------------------------------------------------------------------------

    def _pick(self, index: int) -> Obj | None:
        """The ``index``-th newest live executor pod (the newest are where races are)."""
        live = sorted(self.fake.live_executor_pods(), key=lambda p: -int(self._id(p)))
        return live[index % len(live)] if live else None

    def _id(self, pod: Obj) -> str:
        return str(pod["metadata"]["labels"][SPARK_EXECUTOR_ID_LABEL])

    def _histories(self) -> str:
        return "\n".join(self.backend.parts.monitor.describe_all())

    # -- what the driver does ----------------------------------------------------------------------------

    @rule(total=st.integers(min_value=0, max_value=6))
    def set_target(self, total: int) -> None:
        if total < self.target:
            self.kept = {p["metadata"]["name"] for p in self.fake.live_executor_pods()}
        self.target = total
        self.fake.target = total
        self.backend.request_total_executors({0: total})

    @rule(index=INDEX)
    def kill(self, index: int) -> None:
        pod = self._pick(index)
        if pod is not None:
            self.backend.kill_executors([self._id(pod)])

    @rule(index=INDEX)
    def decommission(self, index: int) -> None:
        pod = self._pick(index)
        if pod is not None:
            self.backend.decommission_executors([self._id(pod)])

    @rule(index=INDEX)
    def executor_registers(self, index: int) -> None:
        # An executor can register before any watch event about its pod reached the backend.
        pod = self._pick(index)
        if pod is not None:
            self.driver.registered[self._id(pod)] = self.clock.now()

    # -- what the cluster does ---------------------------------------------------------------------------

    @rule(index=INDEX)
    def pod_runs(self, index: int) -> None:
        pod = self._pick(index)
        if pod is not None and (pod.get("status") or {}).get("phase") != "Running":
            status = {
                "phase": "Running",
                "containerStatuses": [{"name": "spark-kubernetes-executor", "state": {"running": {}}}],
            }
            self.fake.patch_status(PODS, "default", pod["metadata"]["name"], status)

    @rule(index=INDEX, code=st.sampled_from([1, 137]))
    def pod_fails(self, index: int, code: int) -> None:
        pod = self._pick(index)
        if pod is not None:
            status: dict[str, Any] = {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": "spark-kubernetes-executor",
                        "state": {"terminated": {"exitCode": code, "reason": "Error"}},
                    }
                ],
            }
            self.fake.patch_status(PODS, "default", pod["metadata"]["name"], status)

    @rule(index=INDEX)
    def pod_deleted_behind_the_backend(self, index: int) -> None:
        pod = self._pick(index)
        if pod is not None:
            self.fake.delete(PODS, "default", pod["metadata"]["name"], grace_period_seconds=0)

    @rule()
    def watch_drops(self) -> None:
        self.fake.drop_watches()

    @rule()
    def relist_after_410(self) -> None:
        self.fake.compact()
        self.fake.drop_watches()

    @rule(count=st.integers(min_value=1, max_value=8), verb=st.sampled_from(["watch", "list"]))
    def watch_or_list_errors(self, count: int, verb: str) -> None:
        # The view lags the API meanwhile: pods exist that no snapshot has shown yet.
        self.fake.fail_next(verb, PODS, status=500, count=count)

    @rule(count=st.integers(min_value=1, max_value=4), status=st.sampled_from([500, 503, 429]))
    def create_errors(self, count: int, status: int) -> None:
        self.fake.fail_next("create", PODS, status=status, count=count)

    @rule()
    def slow_create(self) -> None:
        self.fake.slow_creates += 1

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.0, 5.0]))
    def time_passes(self, seconds: float) -> None:
        self.scheduler.advance(seconds)

    # -- the properties ----------------------------------------------------------------------------------

    @invariant()
    def never_more_than_the_target(self) -> None:
        if not hasattr(self, "fake"):
            return
        assert not self.fake.over, f"{self.fake.over}\n{self._histories()}"
        live = {p["metadata"]["name"] for p in self.fake.live_executor_pods()}
        allowed = max(self.target, len(live & self.kept))
        assert len(live) <= allowed, (
            f"{len(live)} live executor pods {sorted(live)}, target {self.target}\n{self._histories()}"
        )

    def teardown(self) -> None:
        if not hasattr(self, "fake"):
            return
        try:
            self.fake.clear_faults()
            self.fake.slow_creates = 0
            self.scheduler.advance(30.0)
            # The driver kills what is above the target, as dynamic allocation does with idle executors.
            live = sorted(self.fake.live_executor_pods(), key=lambda p: int(self._id(p)))
            surplus = [self._id(p) for p in live[self.target :]]
            if surplus:
                self.backend.kill_executors(surplus)
            for executor_id in surplus:
                self.driver.registered.pop(executor_id, None)
            self.scheduler.advance(120.0)
            live = sorted(p["metadata"]["name"] for p in self.fake.live_executor_pods())
            assert not self.fake.over, f"{self.fake.over}\n{self._histories()}"
            assert len(live) == self.target, (
                f"converged to {len(live)} {live}, not the target {self.target}\n{self._histories()}"
            )
        finally:
            self.backend.stop()


FAST = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
LONG = settings(FAST, max_examples=1000, stateful_step_count=60)


def test_never_more_executor_pods_than_the_target() -> None:
    NeverOverAllocates.TestCase.settings = FAST
    NeverOverAllocates.TestCase().runTest()


@pytest.mark.slow
def test_never_more_executor_pods_than_the_target_long_run() -> None:
    NeverOverAllocates.TestCase.settings = LONG
    NeverOverAllocates.TestCase().runTest()
