"""The adapter's retry policy: what is retried, how long it waits, when it gives up."""

from __future__ import annotations

import logging

import pytest

from k8s_backend.kube.port import (
    ApiConnectionError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
)
from k8s_backend.kube.retry import SSL_ERROR_REASON, RetryPolicy, caller_retries, should_retry


class Flaky:
    """Raises the given errors in order, then returns "ok"."""

    def __init__(self, *errors: ApiError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def policy(sleeps: list[float], **kwargs: float) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps.append, jitter=0.0, **kwargs)  # type: ignore[arg-type]


def test_retryable_errors() -> None:
    assert should_retry(TooManyRequestsError("x"))
    assert should_retry(ServerError("x", status=503))
    assert should_retry(ApiConnectionError("refused"))
    assert not should_retry(ApiConnectionError("bad cert", reason=SSL_ERROR_REASON))
    assert not should_retry(InvalidError("x"))
    assert not should_retry(NotFoundError("x"))
    assert not should_retry(ConflictError("x"))
    assert not should_retry(ValueError("x"))


def test_retries_server_and_connection_errors_with_exponential_backoff() -> None:
    sleeps: list[float] = []
    fn = Flaky(ServerError("a"), ApiConnectionError("b"), ServerError("c"))
    assert policy(sleeps, initial_wait=0.1).call(fn, verb="GET", path="/p") == "ok"
    assert fn.calls == 4
    assert sleeps == pytest.approx([0.1, 0.2, 0.4])


def test_retry_after_is_the_minimum_wait() -> None:
    sleeps: list[float] = []
    fn = Flaky(TooManyRequestsError("slow", retry_after=3.0), TooManyRequestsError("slow", retry_after=0.0))
    assert policy(sleeps, initial_wait=0.1).call(fn, verb="POST", path="/p") == "ok"
    assert sleeps == pytest.approx([3.0, 0.2])


def test_absurd_retry_after_is_capped() -> None:
    sleeps: list[float] = []
    fn = Flaky(TooManyRequestsError("slow", retry_after=3600.0))
    policy(sleeps, max_retry_after=10.0, max_total_seconds=100.0).call(fn, verb="GET", path="/p")
    assert sleeps == [10.0]


@pytest.mark.parametrize("error", [InvalidError("bad field"), NotFoundError("nope"), ConflictError("dup")])
def test_client_errors_are_not_retried(error: ApiError) -> None:
    sleeps: list[float] = []
    fn = Flaky(error)
    with pytest.raises(type(error)):
        policy(sleeps).call(fn, verb="POST", path="/p")
    assert fn.calls == 1
    assert sleeps == []


def test_attempts_are_bounded_and_the_last_error_is_raised() -> None:
    sleeps: list[float] = []
    fn = Flaky(*[ServerError(f"e{i}") for i in range(10)])
    with pytest.raises(ServerError, match="e4"):
        policy(sleeps, max_attempts=5).call(fn, verb="GET", path="/p")
    assert fn.calls == 5
    assert len(sleeps) == 4


def test_the_default_budget_is_fabric8_s_ten_attempts_within_thirty_seconds() -> None:
    # Five attempts gave up after ~1.5 s of waiting: a 1.7 s burst of 500s made start() fail.
    sleeps: list[float] = []
    fn = Flaky(*[ServerError(f"e{i}") for i in range(20)])
    with pytest.raises(ServerError, match="e9"):
        policy(sleeps).call(fn, verb="GET", path="/p")
    assert fn.calls == 10
    assert sleeps == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0])
    assert sum(sleeps) <= RetryPolicy().max_total_seconds


def test_giving_up_is_logged_once_with_the_attempts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="k8s_backend.kube.retry")
    with pytest.raises(ServerError):
        policy([], max_attempts=3).call(Flaky(*[ServerError("down")] * 3), verb="GET", path="/p")
    gave_up = [r.getMessage() for r in caplog.records if "giving up" in r.getMessage()]
    assert gave_up == [
        "Kubernetes API GET /p still failing after 3 attempts; giving up: 500 InternalError: down"
    ]


def test_total_time_is_bounded_counting_sleeps() -> None:
    sleeps: list[float] = []
    fn = Flaky(*[TooManyRequestsError("slow", retry_after=4.0) for _ in range(10)])
    with pytest.raises(TooManyRequestsError):
        policy(sleeps, max_total_seconds=10.0, max_attempts=100).call(fn, verb="GET", path="/p")
    # 4 + 4 = 8 s fits in 10 s; a third 4 s wait would not.
    assert sleeps == [4.0, 4.0]
    assert fn.calls == 3


def test_each_retry_is_logged_with_verb_path_and_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="k8s_backend.kube.retry")
    policy([]).call(Flaky(ServerError("kaput")), verb="DELETE", path="/api/v1/namespaces/ns/pods/p1")
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    text = record.getMessage()
    assert "DELETE" in text and "/api/v1/namespaces/ns/pods/p1" in text and "kaput" in text


def test_invalid_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def test_a_caller_that_retries_itself_gets_every_transient_error_at_once() -> None:
    sleeps: list[float] = []
    errors = (
        TooManyRequestsError("slow", retry_after=2.0),
        ServerError("down", status=503),
        ApiConnectionError("reset"),
    )
    for error in errors:
        refused = Flaky(error)
        with caller_retries(), pytest.raises(type(error)):
            policy(sleeps).call(refused, verb="POST", path="/p")
        assert refused.calls == 1 and sleeps == []
    # Outside the block the adapter retries them as before.
    assert policy(sleeps).call(Flaky(TooManyRequestsError("slow")), verb="POST", path="/p") == "ok"
    assert policy(sleeps).call(Flaky(ApiConnectionError("reset")), verb="POST", path="/p") == "ok"
    assert len(sleeps) == 2
