"""Client-side rate limiting of API calls: a token bucket, as client-go's ``flowcontrol`` has.

Each request takes a token; tokens refill at ``qps`` a second up to ``burst``. A request that finds
the bucket empty waits for its token (it is never refused), so a burst of creates is smoothed into
the rate the API server was promised. One bucket is shared by every backend in a process that uses
the same settings (:func:`shared_bucket`), so two applications in one driver process do not get twice
the rate. The defaults (200 a second, bursts of 1000) leave the default allocation path (batches of 20
a second) untouched; they matter for adaptive batches and many applications at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

DEFAULT_QPS = 200.0
DEFAULT_BURST = 1000


class TokenBucket:
    """Thread-safe; ``clock`` and ``sleep`` are injectable (tests use a manual clock)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive (got {qps}); 0 means no bucket at all")
        if burst < 1:
            raise ValueError(f"burst must be at least 1 (got {burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = clock()
        self.waited = 0.0  # seconds callers spent waiting, in all (for figures)

    def reserve(self) -> float:
        """Take a token now; returns how long the caller must wait before using it (0 if none)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0  # may go negative: later callers queue behind this one
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
            self.waited += wait
            return wait

    def acquire(self) -> None:
        """Wait (if needed) until this caller's token is due."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)


_SHARED: dict[tuple[float, int], TokenBucket] = {}
_SHARED_LOCK = threading.Lock()


def shared_bucket(qps: float, burst: int) -> TokenBucket | None:
    """The process's bucket for these settings (``qps`` 0: no limit, None).

    The one piece of process-wide state in the package, on purpose: the limit protects the API server
    from this process, whatever number of backends it runs.
    """
    if qps <= 0:
        return None
    with _SHARED_LOCK:
        bucket = _SHARED.get((qps, burst))
        if bucket is None:
            bucket = _SHARED[(qps, burst)] = TokenBucket(qps, burst)
        return bucket
