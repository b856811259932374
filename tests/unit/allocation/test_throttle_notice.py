"""The first 429 answered to executor pod creates is logged once at WARNING, naming the API Priority and
Fairness FlowSchema and priority level (names when the driver may read them, else UIDs); status() keeps
them, and the allocator counts 429s with fixed batches as with adaptive ones."""

from __future__ import annotations

import logging

import pytest
from alloc_harness import Harness, suite_conf

from k8s_backend.allocation.create_batch import CreateResult
from k8s_backend.allocation.creator import CREATED, Creation
from k8s_backend.allocation.throttling import FLOW_SCHEMAS, PRIORITY_LEVELS, ThrottleNotice
from k8s_backend.kube.flow_control import FlowControl
from k8s_backend.kube.port import PODS
from k8s_backend.testing import FakeKubernetes

LOGGER = "k8s_backend.allocation.throttling"


def refused(
    status: int = 429, flow: FlowControl | None = None, retry_after: float | None = 1.0
) -> CreateResult:
    creation = Creation(
        False, "refused", retryable=True, status=status, retry_after=retry_after, flow_control=flow
    )
    return CreateResult(executor_id=1, creation=creation, latency=0.01)


def ok() -> CreateResult:
    return CreateResult(executor_id=2, creation=CREATED, latency=0.01)


def apf_objects(fake: FakeKubernetes) -> FlowControl:
    schema = fake.create(FLOW_SCHEMAS, None, {"metadata": {"name": "spark-drivers"}})
    level = fake.create(PRIORITY_LEVELS, None, {"metadata": {"name": "tight"}})
    return FlowControl(schema["metadata"]["uid"], level["metadata"]["uid"])


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_the_first_429_is_told_once_with_the_names_of_its_flow_schema_and_priority_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeKubernetes()
    flow = apf_objects(fake)
    notice = ThrottleNotice(fake)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        notice.observe([ok()])
        assert warnings(caplog) == [] and notice.status() is None
        notice.observe([ok(), refused(flow=flow), refused(flow=flow, retry_after=2.0)])
        notice.observe([refused(flow=flow)])  # later 429s: counted elsewhere, not told again
    [message] = warnings(caplog)
    assert "API Priority and Fairness throttles this driver" in message
    assert f"FlowSchema 'spark-drivers' (uid {flow.flow_schema_uid})" in message
    assert f"PriorityLevelConfiguration 'tight' (uid {flow.priority_level_uid})" in message
    assert "Retry-After 2 s" in message
    assert notice.status() == {
        "flow_schema": {"uid": flow.flow_schema_uid, "name": "spark-drivers"},
        "priority_level": {"uid": flow.priority_level_uid, "name": "tight"},
    }
    assert len(fake.calls_of("list", FLOW_SCHEMAS)) == 1  # looked up once


def test_uids_stand_in_for_names_the_driver_may_not_read(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeKubernetes()
    flow = apf_objects(fake)
    fake.fail_next("list", FLOW_SCHEMAS, status=403, count=1)
    notice = ThrottleNotice(fake)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        notice.observe([refused(flow=flow)])
    [message] = warnings(caplog)
    uids = f"FlowSchema uid {flow.flow_schema_uid}, PriorityLevelConfiguration uid {flow.priority_level_uid}"
    assert uids in message
    status = notice.status()
    assert status is not None and status["flow_schema"] == {"uid": flow.flow_schema_uid, "name": None}


def test_a_429_without_pf_headers_is_told_without_a_class(caplog: pytest.LogCaptureFixture) -> None:
    notice = ThrottleNotice(FakeKubernetes())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        notice.observe([refused(503), refused(retry_after=None)])
    [message] = warnings(caplog)
    assert "without naming an API Priority and Fairness class" in message and "no Retry-After" in message
    assert notice.status() == {"flow_schema": None, "priority_level": None}


def test_other_refusals_are_not_throttling(caplog: pytest.LogCaptureFixture) -> None:
    notice = ThrottleNotice(FakeKubernetes())
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        notice.observe([refused(503), refused(0)])
    assert warnings(caplog) == [] and notice.status() is None


def test_fixed_batches_count_429s_and_status_says_who_throttled(caplog: pytest.LogCaptureFixture) -> None:
    h = Harness(suite_conf())
    h.fake.fail_next("create", PODS, status=429, count=1, retry_after=1.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        h.set_targets({0: 3})
        h.advance(2.0)
        h.round()
    assert h.existing_ids() == {1, 2, 3}
    status = h.allocator.status()
    assert status["batches"] == {"adaptive": False, "batch": 5, "throttled": 1}
    assert status["throttled_by"] == {"flow_schema": None, "priority_level": None}
    assert len(warnings(caplog)) == 1
