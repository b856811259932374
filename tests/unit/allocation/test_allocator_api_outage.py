"""An API outage while creating executor pods is not an executor failure (unlike SPARK-55075's counting).

Transient errors (429, 5xx, connection errors and timeouts) make the allocator back off and ask again in a
later round; other errors still count against spark.executor.maxNumFailures. Time is the fake's manual
clock: no test sleeps.
"""

from __future__ import annotations

import logging

import pytest
from alloc_harness import NS, Harness, pod_name, suite_conf

from k8s_backend.conf.model import AllocationConf, LifecycleConf
from k8s_backend.kube.backoff import MAX_DELAY, retry_delay
from k8s_backend.kube.port import PODS, ApiConnectionError, KubernetesApi, Obj, Resource
from k8s_backend.testing import FakeKubernetes

OUTAGE_WARNING = "refuses executor pod creation with a transient error"
RECOVERED = "Executor pod creation works again"


def periodic(max_failures: int = 3) -> Harness:
    """Rounds every batch delay (1 s) as the clock moves, as in a running application."""
    conf = suite_conf(lifecycle=LifecycleConf(max_executor_failures=max_failures))
    return Harness(conf, periodic=True)


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_a_ten_second_503_outage_of_pod_creates_does_not_fail_the_application(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Measured before: the application failed after 9.7 s with "Max number of executor failures (3)
    # reached" although no executor had failed.
    h = periodic(max_failures=3)
    h.fake.fail_for(10.0, "create", PODS, status=503)
    with caplog.at_level(logging.DEBUG, logger="k8s_backend.allocation"):
        h.set_targets({0: 3})
        h.scheduler.advance(11.0)  # the back-off's cap is 1 s: the API healed at 10 s
        assert h.existing_ids() == {1, 2, 3}  # the same ids were asked for again: no id is burnt
        h.scheduler.advance(19.0)
    assert h.failures == []
    assert h.allocator.failed_executors == 0
    assert h.allocator.status()["application_failed"] is False
    # Backing off (0.2, 0.4, 0.8, then 1 s): at most one refused create a second, whatever the round
    # pace, plus the 3 that worked.
    assert len(h.created_ids()) <= 3 + 10 + 3
    assert len(messages(caplog, OUTAGE_WARNING)) == 1
    assert len(messages(caplog, RECOVERED)) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [w for w in warnings if "executor 1" in w]  # no warning per failed create


def test_creates_wait_at_least_as_long_as_retry_after() -> None:
    h = periodic()
    h.fake.fail_next("create", PODS, status=429, retry_after=7.0)
    h.set_targets({0: 1})
    assert h.created_ids() == [1]
    h.scheduler.advance(6.5)
    assert h.created_ids() == [1]  # rounds ran every second, none created
    h.scheduler.advance(1.0)
    assert h.created_ids() == [1, 1]
    assert h.existing_ids() == {1}
    assert h.allocator.failed_executors == 0


def test_server_errors_are_retried_without_counting() -> None:
    h = periodic(max_failures=0)  # a single counted failure would fail the application
    h.fake.fail_next("create", PODS, status=500, count=2)
    h.set_targets({0: 2})
    h.scheduler.advance(10.0)
    assert h.failures == []
    assert h.existing_ids() == {1, 2}


@pytest.mark.parametrize("status", [400, 403, 422])
def test_non_transient_create_errors_still_count_as_failures(status: int) -> None:
    # SPARK-55075: a quota or permission problem must end the application instead of retrying forever.
    h = periodic(max_failures=3)
    h.fake.fail_for(100.0, "create", PODS, status=status)
    h.set_targets({0: 3})
    h.scheduler.advance(10.0)
    assert h.allocator.failed_executors == 4
    assert len(h.failures) == 1 and "Max number of executor failures (3)" in h.failures[0]


def test_executors_that_really_fail_still_count_after_an_outage() -> None:
    h = periodic(max_failures=1)
    h.fake.fail_for(3.0, "create", PODS, status=503)
    h.set_targets({0: 2})
    h.scheduler.advance(10.0)
    assert h.existing_ids() == {1, 2}
    h.fail(1)
    h.fail(2)
    h.scheduler.advance(1.0)
    assert h.allocator.failed_executors == 2
    assert len(h.failures) == 1


def test_no_create_is_attempted_while_backing_off_even_when_a_new_target_comes() -> None:
    h = periodic()
    h.fake.fail_next("create", PODS, status=503)
    h.set_targets({0: 1})
    h.set_targets({0: 5})  # the immediate round must not hammer the API during the backoff
    assert h.created_ids() == [1]


class TimesOutAfterCreating:
    """A create whose response is lost: the server created the pod, the client saw a timeout."""

    def __init__(self, fake: FakeKubernetes, times: int = 1) -> None:
        self._fake = fake
        self._times = times

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        created = self._fake.create(resource, namespace, body)
        if resource is PODS and self._times > 0:
            self._times -= 1
            raise ApiConnectionError("read timed out", reason="Timeout")
        return created

    def __getattr__(self, name: str) -> object:
        return getattr(self._fake, name)


def with_lost_responses(h: Harness, times: int = 1) -> None:
    api: KubernetesApi = TimesOutAfterCreating(h.fake, times)  # type: ignore[assignment]
    h.allocator._creator._api = api  # the creator is the allocator's only caller of create


def test_a_timed_out_create_that_reached_the_server_is_adopted_on_the_409() -> None:
    # The retry under the same id finds the pod (409 AlreadyExists, our name, labels and app id): it is
    # our pod, created, never a failure, and no second pod is made for its slot.
    h = periodic(max_failures=0)
    with_lost_responses(h)
    h.set_targets({0: 2})
    assert h.created_ids() == [1]  # timed out (but exists), the rest of the batch waits
    assert h.allocator.status()["create_retries"]["ids_to_retry"] == [1]
    h.scheduler.advance(1.0)
    assert h.created_ids() == [1, 1, 2]  # id 1 again: 409, adopted; then id 2
    assert h.failures == []
    assert h.allocator.failed_executors == 0
    assert h.allocator.status()["newly_created"] == [1, 2]
    assert h.existing_ids() == {1, 2}
    h.mark(1, "Running")
    h.mark(2, "Running")
    h.scheduler.advance(5.0)
    assert h.created_ids() == [1, 1, 2]


def test_a_timed_out_create_whose_pod_is_then_observed_is_not_asked_for_again() -> None:
    h = Harness(suite_conf(lifecycle=LifecycleConf(max_executor_failures=0)))
    with_lost_responses(h)
    h.set_targets({0: 1})
    h.resync()  # the pod shows up in a list
    h.advance(5.0)
    h.round()
    assert h.created_ids() == [1]
    assert h.allocator.status()["create_retries"]["ids_to_retry"] == []
    assert h.failures == []


def test_a_409_for_a_pod_that_is_not_ours_is_still_a_failure() -> None:
    h = Harness()
    h.fake.create(
        PODS,
        NS,
        {
            "metadata": {"name": pod_name(1), "labels": {"spark-app-selector": "another-app"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    h.set_targets({0: 1})
    assert h.allocator.failed_executors == 1


def test_the_batch_delay_paces_the_backoff() -> None:
    h = Harness(suite_conf(allocation=AllocationConf(batch_size=5, batch_delay=0.0)), periodic=False)
    h.fake.fail_next("create", PODS, status=503)
    h.set_targets({0: 1})
    h.round()
    assert h.created_ids() == [1]  # even with batch delay 0, no immediate second attempt


def test_backoff_doubles_up_to_its_cap_and_honours_retry_after() -> None:
    assert [retry_delay(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.8, 1.0]
    assert retry_delay(50) == MAX_DELAY == 1.0  # the recovery bound, whatever the outage's length
    assert retry_delay(1, retry_after=7.0) == 7.0
    assert retry_delay(1, retry_after=1e9) == 300.0


def test_a_round_runs_as_soon_as_the_backoff_ends_not_a_batch_delay_later() -> None:
    h = periodic()  # rounds every 1 s
    h.fake.fail_next("create", PODS, status=500)
    h.set_targets({0: 1})
    assert h.created_ids() == [1]
    h.scheduler.advance(0.2)  # the first back-off: 0.2 s
    assert h.created_ids() == [1, 1]
    assert h.existing_ids() == {1}


def test_after_a_long_outage_creates_resume_within_the_backoff_cap_of_its_end() -> None:
    h = periodic(max_failures=0)
    h.fake.fail_for(60.0, "create", PODS, status=503)
    h.set_targets({0: 2})
    h.scheduler.advance(60.0)
    assert h.existing_ids() == set()
    h.scheduler.advance(MAX_DELAY)
    assert h.existing_ids() == {1, 2}
    assert h.failures == []
