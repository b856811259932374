"""Carrying out one round's :class:`~k8s_backend.allocation.policy.RequestExecutors`: executor ids handed
out, pods created (in order or a bounded number in flight) and what became of each create recorded.

The allocator decides what to request; this part only executes it. The allocator's own bookkeeping (is it
stopped, which requests are newly created) is reached through two callables, so it stays under the
allocator's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from k8s_backend.allocation.create_batch import CreatePool, CreateResult
from k8s_backend.allocation.create_retries import CreateRetries
from k8s_backend.allocation.creator import Creation, ExecutorPodCreator
from k8s_backend.allocation.executor_ids import ExecutorIds
from k8s_backend.allocation.failures import FailureBudget
from k8s_backend.allocation.pod_deletes import PodDeletes
from k8s_backend.allocation.policy import NewRequest, RequestExecutors
from k8s_backend.allocation.pvcs import PvcReusePolicy
from k8s_backend.allocation.settings import AllocatorListeners
from k8s_backend.common import Clock
from k8s_backend.conf.model import ResourceProfile
from k8s_backend.kube.retry import caller_retries

log = logging.getLogger(__name__)

Accept = Callable[[int, NewRequest], bool]  # records a created executor; False: the allocator stopped


@attrs.frozen
class RequestParts:
    """The allocator's parts a request uses (shared with its rounds: ids, retries, failure budget)."""

    creator: ExecutorPodCreator
    ids: ExecutorIds
    retries: CreateRetries
    failures: FailureBudget
    deletes: PodDeletes
    pvc_policy: PvcReusePolicy


class ExecutorRequests:
    """Runs the creates a round requests, on a lazily started pool shared by the rounds."""

    def __init__(
        self,
        parts: RequestParts,
        pool: CreatePool,
        clock: Clock,
        listeners: AllocatorListeners,
        *,
        stopped: Callable[[], bool],
        accept: Accept,
    ) -> None:
        """``stopped``: whether the allocator halted; ``accept``: records a created executor unless it
        halted."""
        self._parts = parts
        self._pool = pool
        self._clock = clock
        self._listeners = listeners
        self._stopped = stopped
        self._accept = accept

    def shutdown(self) -> None:
        """Stop the pool's threads (creates in flight finish)."""
        self._pool.shutdown()

    def request(
        self,
        request: RequestExecutors,
        profile: ResourceProfile,
        pvcs_in_use: frozenset[str],
        concurrency: int,
        results: list[CreateResult],
    ) -> bool:
        """Create the request's pods, ``concurrency`` in flight (1: in order, as Spark); results are appended
        to ``results``. Returns False when the round must create nothing more."""
        # Over 60 lines: the pool's three callbacks (the next id, the create, its result) share the request's
        # state (ids left, go on, refused once, retried ids), so they are closures of this one call.
        parts = self._parts
        if parts.ids.exhausted and not parts.retries.pending_ids:
            parts.ids.next()  # None, and the one WARNING naming spark.kubernetes.allocation.maximum
            return False
        log.info(
            "Going to request %d executors from Kubernetes for ResourceProfile Id: %d, target: %d, "
            "known: %d, sharedSlotFromPendingPods: %d.",
            request.count,
            request.rp_id,
            request.target,
            request.known,
            request.shared_slots,
        )
        reusable = parts.creator.reusable_pvcs(pvcs_in_use)
        if reusable or parts.pvc_policy.allocate_on_pvc:
            concurrency = 1  # claims are handed out one create at a time
        left = [request.count]
        go_on = [True]
        refused = [False]
        why = _why(request)
        retried: set[int] = set()

        def next_id() -> int | None:
            if left[0] <= 0 or not go_on[0] or parts.creator.must_wait_for_pvc(reusable):
                return None
            if parts.failures.exhausted or not parts.retries.may_create():
                go_on[0] = False
                return None
            retry_id = parts.retries.take_id(request.rp_id)
            stopped = self._stopped()
            executor_id = None if stopped else retry_id if retry_id is not None else parts.ids.next()
            if executor_id is not None and executor_id == retry_id:
                retried.add(executor_id)
            if executor_id is None:  # stopped, or spark.kubernetes.allocation.maximum reached
                go_on[0] = False
                return None
            left[0] -= 1
            return executor_id

        def create(executor_id: int) -> Creation:
            # The allocator is the one layer that retries a create (CreateRetries; adaptive batches also
            # size themselves from each refusal): the adapter must try once.
            with caller_retries():
                return parts.creator.create(executor_id, profile, reusable)

        def on_result(result: CreateResult) -> bool:
            results.append(result)
            reason = why + (RETRIED if result.executor_id in retried else "")
            if not self._record(result.executor_id, request.rp_id, result.creation, refused, reason):
                go_on[0] = False
            return go_on[0]

        self._pool.run(next_id, create, on_result, concurrency)
        return go_on[0]

    def _record(
        self, executor_id: int, rp_id: int, creation: Creation, refused: list[bool], reason: str
    ) -> bool:
        """Record what became of one create (on the round's thread); False: create no more this round."""
        parts = self._parts
        if creation.retryable:
            # An API outage is not an executor failure: back off and ask again in a later round. Creates
            # in flight together make the backoff grow once, not once each.
            if refused[0]:
                parts.retries.requeue(executor_id, rp_id, creation)
            else:
                refused[0] = True
                parts.retries.failed(executor_id, rp_id, creation)
            return False
        if not creation.created:
            # Pod-creation errors count against spark.executor.maxNumFailures (SPARK-55075): a quota
            # or permission problem must end the application instead of retrying forever. The rest
            # of the batch waits for the next round.
            parts.failures.register_failure()
            self._listeners.events.creation_failed(executor_id, rp_id, creation.error)
            return False
        parts.retries.succeeded()
        if not self._accept(executor_id, NewRequest(rp_id, self._clock.now(), creation.resource_version)):
            # stop() ran while this create was in flight: its delete may already be done.
            parts.deletes.take_back(executor_id)
            return False
        self._listeners.events.requested(executor_id, rp_id, reason)
        log.debug("Requested executor with id %d from Kubernetes.", executor_id)
        return True


RETRIED = "; the same id asked again after a transient create error (a pod that exists is adopted)"


def _why(request: RequestExecutors) -> str:
    """Why a round created its pods, for the executor histories: the counts it decided on."""
    return (
        f"created for target {request.target} of profile {request.rp_id}: {request.known} counted "
        f"(running, pending or requested), {request.count} requested this round"
    )
