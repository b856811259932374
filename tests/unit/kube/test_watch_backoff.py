"""The delay of a list-and-watch loop after a failed cycle."""

from __future__ import annotations

import pytest

from k8s_backend.kube.backoff import MAX_DELAY
from k8s_backend.kube.port import ServerError, TooManyRequestsError
from k8s_backend.kube.watch_backoff import MAX_BACKOFF, failure_delay, misbehaving_delay


def test_misbehaviour_doubles_from_half_a_second_up_to_the_cap() -> None:
    assert [misbehaving_delay(n, 0.999999) for n in (1, 2, 3)] == pytest.approx([0.5, 1.0, 2.0], rel=1e-5)
    assert misbehaving_delay(50, 0.0) == MAX_BACKOFF / 2  # jitter halves at most


def test_a_transient_api_error_gets_the_short_back_off_but_never_less_than_retry_after() -> None:
    busy = ServerError("busy", status=503)
    assert failure_delay(20, busy, 0.999999) <= MAX_DELAY
    throttled = TooManyRequestsError("slow down", retry_after=7.0)
    assert failure_delay(1, throttled, 0.0) == 7.0


def test_anything_else_is_a_misbehaviour() -> None:
    assert failure_delay(3, ValueError("bad event"), 0.5) == misbehaving_delay(3, 0.5)
