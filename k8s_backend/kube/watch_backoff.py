"""How long a list-and-watch loop waits after a failed cycle (the executor pods' watch, the quota view's).

Transient API errors (429, 5xx, connection errors, timeouts) get the short back-off of
:mod:`k8s_backend.kube.backoff`, never shorter than the server's ``Retry-After``; anything else (a server
that misbehaves without an error: a 410 right after a list, a watch that closes at once) doubles from
half a second up to :data:`MAX_BACKOFF`. ``draw`` is the caller's random draw in [0, 1): the jitter, so
these stay pure.
"""

from __future__ import annotations

from k8s_backend.kube.backoff import retry_delay
from k8s_backend.kube.port import ApiError
from k8s_backend.kube.retry import should_retry

MAX_BACKOFF = 30.0  # of a server that misbehaves without an error; API errors: kube.backoff.MAX_DELAY


def misbehaving_delay(failures: int, draw: float) -> float:
    """Seconds after the ``failures``-th misbehaviour in a row (1 for the first)."""
    base = min(MAX_BACKOFF, 0.5 * 2 ** min(failures - 1, 10))
    return float(base * (0.5 + draw / 2))


def failure_delay(failures: int, error: Exception, draw: float) -> float:
    """Seconds after the ``failures``-th failed cycle in a row that raised ``error``."""
    if should_retry(error):
        retry_after = error.retry_after if isinstance(error, ApiError) else None
        return retry_delay(failures, retry_after=retry_after, scale=0.5 + draw / 2)
    return misbehaving_delay(failures, draw)
