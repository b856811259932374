"""The one back-off of API errors for callers that retry themselves (creates, lists, watches).

A create, list or watch that fails with a transient API error (429, 5xx, a connection error or a
timeout) is retried by exactly one layer: the caller (the allocator's rounds, the polling and watch
sources), inside :func:`k8s_backend.kube.retry.caller_retries`, so the client adapter makes one attempt
and raises at once. Two layers each backing off on the same error multiplied their waits: the adapter's
10 attempts (~20 s) under the allocator's own back-off up to 30 s made a 9-error burst cost 22 s.

The back-off is short on purpose and resets on the first answer: its cap (:data:`MAX_DELAY`) bounds how
long the caller can sleep past the moment the API heals, whatever the length of the outage. Load is
bounded all the same: one request a second at most per caller, every attempt takes a token from the
client's rate limiter (:mod:`k8s_backend.kube.rate_limit`), and a server that wants fewer requests says
so with ``Retry-After``, which is always honoured (up to :data:`MAX_RETRY_AFTER`).
"""

from __future__ import annotations

INITIAL_DELAY = 0.2
"""Seconds before the first retry after an error."""

MAX_DELAY = 1.0
"""The longest wait of our own choosing between two attempts (seconds): the recovery bound."""

MAX_RETRY_AFTER = 300.0
"""The longest ``Retry-After`` honoured: a guard against a server asking for an absurd wait (seconds)."""


def retry_delay(
    failures: int,
    *,
    retry_after: float | None = None,
    initial: float = INITIAL_DELAY,
    cap: float = MAX_DELAY,
    scale: float = 1.0,
) -> float:
    """Seconds to wait after the ``failures``-th transient error in a row (1 for the first).

    ``initial`` doubled per error up to ``cap``, times ``scale`` (a caller's jitter, drawn by the caller
    so this stays pure), and never less than the server's ``retry_after`` (itself capped at
    :data:`MAX_RETRY_AFTER`; jitter never shortens it).
    """
    exponent = min(max(failures - 1, 0), 30)  # 2**30 * initial is beyond any cap
    delay = min(initial * 2.0**exponent, cap) * scale
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
    return delay
