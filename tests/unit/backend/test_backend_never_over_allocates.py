"""'Never more executor pods than the target': a stateful property-based test over the whole backend.

Hypothesis interleaves target changes, kills, decommissions, pod deletions and failures,
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
LAG = 10_000.0  # seconds: until the watch_lags rule says otherwise


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
        self.killed: set[str] = set()
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
        self.scheduler.advance(1.0)  # the next round acts on it
        self._executors_register()

    @rule(index=INDEX)
    def kill(self, index: int) -> None:
        # Dynamic allocation releasing an executor soon after it registered: a round passes before (the
        # backend sees it registered) and after (the backend acts on the kill).
        self.scheduler.advance(1.0)
        self._executors_register()
        pod = self._pick(index)
        if pod is not None:
            self.killed.add(self._id(pod))
            self.backend.kill_executors([self._id(pod)])
            self.scheduler.advance(1.0)

    @rule(index=INDEX)
    def decommission(self, index: int) -> None:
        pod = self._pick(index)
        if pod is not None:
            self.backend.decommission_executors([self._id(pod)])

    def _executors_register(self) -> None:
        """Executors register with the driver a moment after their pods are made, maybe before any watch
        event about the pod reached the backend; a killed one never comes back."""
        for pod in self.fake.live_executor_pods():
            executor_id = self._id(pod)
            if executor_id not in self.killed:
                self.driver.registered.setdefault(executor_id, self.clock.now())

    # -- what the cluster does ---------------------------------------------------------------------------

    @rule(index=INDEX, event=st.sampled_from(["runs", "fails 1", "fails 137", "deleted"]))
    def pod_event(self, index: int, event: str) -> None:
        """A pod starts running, fails, or is deleted behind the backend's back."""
        pod = self._pick(index)
        if pod is None:
            return
        name = pod["metadata"]["name"]
        if event == "deleted":
            self.fake.delete(PODS, "default", name, grace_period_seconds=0)
            return
        if event == "runs":
            state: dict[str, Any] = {"running": {}}
        else:
            state = {"terminated": {"exitCode": int(event.split()[1]), "reason": "Error"}}
        status = {
            "phase": "Running" if event == "runs" else "Failed",
            "containerStatuses": [{"name": "spark-kubernetes-executor", "state": state}],
        }
        self.fake.patch_status(PODS, "default", name, status)

    @rule(
        fault=st.sampled_from(["watch drop", "relist after 410", "create errors", "slow create"]),
        count=st.integers(min_value=1, max_value=4),
        status=st.sampled_from([500, 503, 429]),
    )
    def api_fault(self, fault: str, count: int, status: int) -> None:
        if fault == "watch drop":
            self.fake.drop_watches()
        elif fault == "relist after 410":
            self.fake.compact()
            self.fake.drop_watches()
        elif fault == "create errors":
            self.fake.fail_next("create", PODS, status=status, count=count)
        else:  # the create reaches the server, the client times out
            self.fake.slow_creates += count

    @rule(lagging=st.booleans())
    def watch_lags(self, lagging: bool) -> None:
        """Watches and lists fail (the view lags the API: pods exist no snapshot has shown), or work
        again. Working again clears the other injected faults too."""
        if lagging:
            self.fake.fail_for(LAG, "watch", PODS, status=500)
            self.fake.fail_for(LAG, "list", PODS, status=500)
        else:
            self.fake.clear_faults()

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.0, 5.0]))
    def time_passes(self, seconds: float) -> None:
        self.scheduler.advance(seconds)
        self._executors_register()

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
            self.killed.update(surplus)
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
@pytest.mark.timeout(3600)  # ~1 s an example: the suite's 300 s would cut it short
def test_never_more_executor_pods_than_the_target_long_run() -> None:
    NeverOverAllocates.TestCase.settings = LONG
    NeverOverAllocates.TestCase().runTest()
