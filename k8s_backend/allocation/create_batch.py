"""Running one round's creates: one after another (Spark's way), or with a bounded number in flight.

Only the creates themselves run on the pool's threads. Everything that touches the allocator's
bookkeeping (handing out the next executor id, recording what became of a create) runs on the caller's
thread, one result at a time, so the bookkeeping stays single-threaded and exact: an id is handed out
only when its create is about to be sent, and once any create is refused no further one is sent (those
already in flight finish and are recorded).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

import attrs

from k8s_backend.allocation.creator import Creation
from k8s_backend.common import Clock

log = logging.getLogger(__name__)


@attrs.frozen
class CreateResult:
    """What became of the create of one executor, and how long the API took to answer it (seconds)."""

    executor_id: int
    creation: Creation
    latency: float


NextId = Callable[[], "int | None"]  # the next executor id to create, or None: send no more this round
Create = Callable[[int], Creation]
OnResult = Callable[[CreateResult], bool]  # records the result; False: send no more this round


class CreatePool:
    """A lazily started pool of create threads, shared by an allocator's rounds; :meth:`shutdown` at stop."""

    def __init__(self, clock: Clock, max_workers: int) -> None:
        self._clock = clock
        self._max_workers = max(1, max_workers)
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    def run(self, next_id: NextId, create: Create, on_result: OnResult, concurrency: int) -> int:
        """Send creates until ``next_id`` says no or ``on_result`` says stop; returns how many were sent.

        ``concurrency`` 1 runs every create on the caller's thread, in order, as Spark does.
        """
        pool = self._executor() if concurrency > 1 else None
        if pool is None:
            return self._run_in_order(next_id, create, on_result)
        return self._run_parallel(pool, next_id, create, on_result, min(concurrency, self._max_workers))

    def _timed(self, create: Create, executor_id: int) -> CreateResult:
        started = self._clock.now()
        try:
            creation = create(executor_id)
        except Exception as error:  # never lose an id in flight: the pod may exist, ask again under it
            log.exception("Creating the pod of executor %d failed unexpectedly", executor_id)
            creation = Creation(False, str(error), retryable=True, reuse_id=True)
        return CreateResult(executor_id, creation, max(self._clock.now() - started, 0.0))

    def _run_in_order(self, next_id: NextId, create: Create, on_result: OnResult) -> int:
        sent = 0
        while (executor_id := next_id()) is not None:
            sent += 1
            if not on_result(self._timed(create, executor_id)):
                break
        return sent

    def _run_parallel(
        self,
        pool: concurrent.futures.ThreadPoolExecutor,
        next_id: NextId,
        create: Create,
        on_result: OnResult,
        concurrency: int,
    ) -> int:
        sent = 0
        sending = True
        in_flight: set[concurrent.futures.Future[CreateResult]] = set()
        while True:
            while sending and len(in_flight) < concurrency:
                executor_id = next_id()
                if executor_id is None:
                    sending = False
                    break
                sent += 1
                in_flight.add(pool.submit(self._timed, create, executor_id))
            if not in_flight:
                return sent
            done, in_flight = concurrent.futures.wait(
                in_flight, return_when=concurrent.futures.FIRST_COMPLETED
            )
            # In id order, so that a log or a listener sees the round's creates as they were sent.
            for result in sorted((f.result() for f in done), key=lambda r: r.executor_id):
                if not on_result(result):
                    sending = False

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor | None:
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self._max_workers, thread_name_prefix="k8s-executor-create"
                )
            return self._pool

    def shutdown(self) -> None:
        """Let creates in flight finish on their own; later rounds create in order on their thread."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
