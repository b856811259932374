"""When and how long the official-client adapter retries a failed API call (tenacity policy).

Throttling (429), server errors (5xx) and connection problems are retried with exponential backoff and
jitter; a 429's ``Retry-After`` is the minimum wait. Validation and other 4xx errors are never retried:
asking again cannot change the answer. Attempts and total time are both bounded, so a caller sees the
last error after a predictable delay.

Callers that retry themselves (creates, lists and watches of the allocation path) run inside
:func:`caller_retries`, where the adapter tries once: one layer, one budget (see
:mod:`k8s_backend.kube.backoff`). The policy below serves every other call.

The default budget is fabric8's, the client Spark itself uses: up to 10 attempts
(``kubernetes.request.retry.backoffLimit``) with exponential backoff from 100 ms. Five attempts gave up
after ~1.5 s of waiting, so a 1.7 s burst of 500s from an API server (a restart, a leader election)
made the backend's start fail; ten ride out bursts of ~20 s (0.1 + 0.2 + ... + 3.2 + 5 + 5 + 5 s of
waits), and ``max_total_seconds`` still caps a call at 30 s.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import attrs
import tenacity

from k8s_backend.kube.port import ApiConnectionError, ApiError, is_retryable

log = logging.getLogger(__name__)

T = TypeVar("T")

SSL_ERROR_REASON = "SSLError"
"""Reason of an :class:`ApiConnectionError` caused by TLS (a bad certificate does not heal by waiting)."""


def should_retry(error: BaseException) -> bool:
    """Whether the adapter retries after ``error``: 429, 5xx and connection errors other than TLS ones."""
    if isinstance(error, ApiConnectionError) and error.reason == SSL_ERROR_REASON:
        return False
    return is_retryable(error)


_CALLER_RETRIES = contextvars.ContextVar("k8s_backend_caller_retries", default=False)


@contextlib.contextmanager
def caller_retries() -> Iterator[None]:
    """Within this block (on this thread), the adapter makes one attempt: a 429, a 5xx, a connection
    error or a timeout is raised at once for the caller to retry.

    For callers that retry in their own loop (the allocator's creates, the polling and watch sources'
    lists and watches, see :mod:`k8s_backend.kube.backoff`): retries hidden in the adapter would
    multiply the caller's waits, and each retry would be one more refusal the caller never sees.
    """
    token = _CALLER_RETRIES.set(True)
    try:
        yield
    finally:
        _CALLER_RETRIES.reset(token)


def _adapter_retries(error: BaseException) -> bool:
    if _CALLER_RETRIES.get():
        return False
    return should_retry(error)


@attrs.frozen
class RetryPolicy:
    """Bounded exponential backoff with jitter for API calls.

    ``sleep`` is injectable so tests run the policy without waiting. The total-time bound counts the
    time spent sleeping (also when ``sleep`` is a fake), so it holds whatever ``sleep`` does.
    """

    max_attempts: int = 10  # fabric8's backoffLimit (see the module docstring)
    max_total_seconds: float = 30.0
    initial_wait: float = 0.1  # fabric8's first backoff, as Spark's own client
    max_wait: float = 5.0
    jitter: float = 0.1
    max_retry_after: float = 60.0  # guards against a server asking for an absurd wait
    sleep: Callable[[float], None] = time.sleep

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}")
        if self.max_total_seconds < 0 or self.initial_wait < 0 or self.max_wait < 0:
            raise ValueError("RetryPolicy waits and max_total_seconds must be >= 0")

    def call(self, fn: Callable[[], T], *, verb: str, path: str) -> T:
        """Run ``fn``, retrying retryable API errors; re-raise the last error once out of budget."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_adapter_retries),
            wait=self._wait,
            stop=self._stop,
            sleep=self.sleep,
            before_sleep=lambda state: _log_retry(state, verb, path),
            reraise=True,
        )
        try:
            return retrying(fn)
        except ApiError as error:
            if _adapter_retries(error):
                attempts = retrying.statistics.get("attempt_number", 1)
                # INFO: the error is raised, and whoever catches it tells it (the CLI in one line).
                log.info(
                    "Kubernetes API %s %s still failing after %d attempts; giving up: %s",
                    verb,
                    path,
                    attempts,
                    error,
                )
            raise

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exponent = min(state.attempt_number - 1, 60)  # 2**60 is already beyond any max_wait
        backoff: float = min(self.initial_wait * 2.0**exponent, self.max_wait)
        backoff += random.uniform(0, self.jitter)
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = error.retry_after if isinstance(error, ApiError) else None
        if retry_after is not None:
            return max(backoff, min(float(retry_after), self.max_retry_after))
        return backoff

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        if state.attempt_number >= self.max_attempts:
            return True
        # idle_for is the sum of past sleeps; with a fake sleep the wall clock barely moves.
        spent = max(state.seconds_since_start or 0.0, state.idle_for)
        return spent + (state.upcoming_sleep or 0.0) > self.max_total_seconds


NO_RETRY = RetryPolicy(max_attempts=1)
"""A policy that tries once (for callers that retry at a higher level)."""


def _log_retry(state: tenacity.RetryCallState, verb: str, path: str) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.warning(
        "Kubernetes API %s %s failed (attempt %d), retrying in %.2fs: %s",
        verb,
        path,
        state.attempt_number,
        state.upcoming_sleep,
        error,
    )
