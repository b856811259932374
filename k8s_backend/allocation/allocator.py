"""The ``direct`` executor pod allocator: targets in, executor pods created and deleted.

Counterpart of Spark's ExecutorPodsAllocator. Each allocation round gathers its inputs (the snapshot
batch, the bookkeeping below, the executor ids the driver knows, the targets, the time), lets
:func:`k8s_backend.allocation.policy.plan_round` decide, and applies the plan through the Kubernetes
port (the creates of its requests through :mod:`k8s_backend.allocation.executor_requests`). Every API
call is guarded: a failed call is logged and the rest of the round goes on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from k8s_backend.allocation.adaptive import BatchDecision, creates_in_flight
from k8s_backend.allocation.create_batch import CreatePool, CreateResult
from k8s_backend.allocation.create_retries import CreateRetries
from k8s_backend.allocation.creator import ExecutorPodCreator, PodSpecBuilder
from k8s_backend.allocation.driver_pod import fetch_driver_pod
from k8s_backend.allocation.executor_ids import ExecutorIds, check_targets
from k8s_backend.allocation.executor_requests import ExecutorRequests, RequestParts
from k8s_backend.allocation.failures import ExecutorFailureTracker, FailureBudget
from k8s_backend.allocation.node_avoidance import NodeAvoider
from k8s_backend.allocation.pacing import BatchPacer
from k8s_backend.allocation.pod_deletes import PodDeletes
from k8s_backend.allocation.pod_index import PodIndex
from k8s_backend.allocation.policy import (
    AllocationPlan,
    DeleteExcessPending,
    NewRequest,
    RoundInput,
    plan_round,
)
from k8s_backend.allocation.pvcs import claim_names_in_use
from k8s_backend.allocation.quota import QuotaGate
from k8s_backend.allocation.settings import AllocatorIdentity, AllocatorListeners, AllocatorSettings
from k8s_backend.allocation.throttling import ThrottleNotice
from k8s_backend.common import Cancellable, Clock, Scheduler
from k8s_backend.common.failure_sink import FailureReporter, FailureSink
from k8s_backend.conf.model import DEFAULT_PROFILE_ID, ResourceProfile
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore, Subscription

__all__ = [
    "AllocatorIdentity",
    "AllocatorListeners",
    "AllocatorSettings",
    "ExecutorPodsAllocator",
    "PodSpecBuilder",
    "fetch_driver_pod",
]

log = logging.getLogger(__name__)


class ExecutorPodsAllocator:
    """Keeps the executor pods of each resource profile at their target.

    Thread model: rounds run on the snapshot store's subscriber thread, never concurrently with
    themselves; the other methods may be called from any thread.
    """

    def __init__(
        self,
        settings: AllocatorSettings,
        identity: AllocatorIdentity,
        api: KubernetesApi,
        builder: PodSpecBuilder,
        store: SnapshotsStore,
        clock: Clock,
        *,
        listeners: AllocatorListeners | None = None,
        failures: FailureReporter | None = None,
        scheduler: Scheduler | None = None,
        quota: QuotaGate | None = None,
        avoider: NodeAvoider | None = None,
    ) -> None:
        """``failures``: where running out of ``spark.executor.maxNumFailures`` is reported (by default
        nowhere but the log). ``scheduler``: runs the early rounds of adaptive batches (without one, every
        round waits for the store's next delivery). ``quota``: caps each round at what the namespace's
        ResourceQuotas allow (spark.kubernetes.allocation.quotaAware)."""
        # Over 60 lines by design: it only builds the allocator's collaborators and its initial state, one
        # assignment each.
        self._settings = settings
        self.quota = quota
        self.avoider = avoider  # only for status(): it avoids nodes through the pod builder
        self._api = api
        self._store = store
        self._clock = clock
        self._app_id = identity.app_id
        self._listeners = listeners or AllocatorListeners()
        self._namespace = settings.namespace
        self._limits = settings.limits
        self._pvc_policy = settings.pvc_policy
        self._creator = ExecutorPodCreator(
            api,
            builder,
            clock,
            namespace=settings.namespace,
            pvc_policy=settings.pvc_policy,
            identity=identity,
        )
        self._retries = CreateRetries(clock)
        self._scheduler = scheduler
        self._wakeup: Cancellable | None = None  # the round run when a create back-off ends
        self._pacer = BatchPacer(
            settings.adaptive,
            batch_size=settings.limits.batch_size,
            concurrency=settings.concurrency,
            batch_delay=settings.batch_delay,
            early_round=None if scheduler is None else (scheduler, self._round_now),
        )
        self._deletes = PodDeletes(api, settings.namespace, identity.app_id)
        self._throttling = ThrottleNotice(api)
        self._failures = FailureBudget(
            ExecutorFailureTracker(clock, settings.failures_validity_interval),
            settings.max_failures,
            FailureSink() if failures is None else failures,
        )
        self._ids = ExecutorIds(settings.maximum)
        self._requests = ExecutorRequests(
            RequestParts(
                self._creator, self._ids, self._retries, self._failures, self._deletes, settings.pvc_policy
            ),
            CreatePool(clock, creates_in_flight(settings.concurrency)),
            clock,
            self._listeners,
            stopped=self._is_stopped,
            accept=self._accept,
        )

        self._subscription: Subscription | None = None  # the store's deliveries to us, once started
        self._lock = threading.Lock()
        self._targets: dict[int, int] = {}  # never shrinks: profiles are not removed (SPARK-30749)
        self._profiles: dict[int, ResourceProfile] = {DEFAULT_PROFILE_ID: settings.default_profile}
        self._newly_created: dict[int, NewRequest] = {}
        self._known_newly_created: dict[int, NewRequest] = {}
        self._deleted: frozenset[int] = frozenset()
        self._counted_failures: frozenset[int] = frozenset()
        self._index = PodIndex()  # touched only by rounds, which never run concurrently
        self._outstanding = 0
        self._started = False
        self._stopped = False

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Subscribe to the snapshot store: a round every ``spark.kubernetes.allocation.batch.delay``."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self._subscription = self._store.add_subscriber(self._settings.batch_delay, self._on_batch)

    def halt(self) -> None:
        """Stop requesting and deleting pods; rounds still delivered afterwards do nothing."""
        with self._lock:
            self._stopped = True
            wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None:
            wakeup.cancel()
        self._pacer.halt()
        self._requests.shutdown()
        if self.quota is not None:
            self.quota.stop()  # its watches' threads and connections

    def stop(self) -> None:
        """Halt, then delete every executor pod of the application (Spark's stop(appId))."""
        self.halt()
        self._deletes.all()

    # -- targets -------------------------------------------------------------------------------------

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        """Make a resource profile known so targets can name it."""
        with self._lock:
            self._profiles[profile.id] = profile

    def set_total_expected_executors(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> None:
        """Set the executor target of each resource profile id (profiles not named keep theirs).

        Runs a round at once when nothing is outstanding, so scaling up does not wait for the next
        tick (SPARK-28487).
        """
        with self._lock:
            known = dict(self._profiles)
            known.update(profiles or {})
            check_targets(targets, profiles, known)
            self._profiles = known
            self._targets.update(targets)
            outstanding = self._outstanding
        if outstanding == 0:
            self._round_now()

    def mark_for_removal(self, executor_ids: Collection[int]) -> None:
        """Nothing to do: the direct allocator's pods are deleted by name, no controller picks them."""

    def generate_executor_id(self, pod_name: str) -> int:
        """Refused: the direct allocator's executors get their id in their pod, none asks for one."""
        raise ValueError(
            f"pod {pod_name} asks for an executor id, but the direct allocator creates no EXECID pods "
            "(only spark.kubernetes.allocation.pods.allocator=statefulset or deployment does)"
        )

    def delete_owned(self) -> None:
        """Nothing to do: the direct allocator owns only the executor pods (deleted by the stop steps)."""

    # -- queries -------------------------------------------------------------------------------------

    def profile(self, rp_id: int) -> ResourceProfile | None:
        """The resource profile of this id, if it was registered."""
        with self._lock:
            return self._profiles.get(rp_id)

    def is_deleted(self, executor_id: int) -> bool:
        """Whether the allocator deleted this executor's pod as excess (the driver refuses it)."""
        return executor_id in self._deleted

    @property
    def outstanding_pods(self) -> int:
        """Unknown pending pods plus requests not yet seen (Spark's numOutstandingPods)."""
        with self._lock:
            return self._outstanding

    @property
    def executor_id_counter(self) -> int:
        """The last executor id handed out."""
        return self._ids.last

    @property
    def pvc_counter(self) -> int:
        """How many PVCs this allocator created."""
        return self._creator.pvc_counter

    @property
    def failed_executors(self) -> int:
        """Executor failures that currently count against spark.executor.maxNumFailures."""
        return self._failures.num_failed

    def advance_executor_id_counter(self, min_next: int) -> None:
        """Make the next executor id at least ``min_next`` (after a restart: never reuse an id)."""
        self._ids.at_least(min_next - 1)

    def status(self) -> dict[str, Any]:
        """A JSON-friendly view of the allocator for diagnostics."""
        with self._lock:
            return {
                "targets": dict(self._targets),
                "outstanding": self._outstanding,
                "newly_created": sorted(self._newly_created),
                "scheduler_known_newly_created": sorted(self._known_newly_created),
                "deleted": sorted(self._deleted),
                "executor_id_counter": self._ids.last,
                "pvc_counter": self._creator.pvc_counter,
                "failures": self._failures.num_failed,
                "max_failures": self._failures.max_failures,
                "application_failed": self._failures.exhausted,
                "stopped": self._stopped,
                "create_retries": self._retries.status(),
                "batches": self._pacer.status(),
                "throttled_by": self._throttling.status(),
                "maximum_reached": self._ids.maximum_reached,
                "quota": None if self.quota is None else self.quota.status(),
                "avoided_nodes": None if self.avoider is None else self.avoider.status(),
            }

    # -- the round -----------------------------------------------------------------------------------

    def _on_batch(self, batch: SnapshotBatch) -> None:
        with self._lock:
            if self._stopped:
                return
        known = frozenset(self._listeners.known_executor_ids())
        departing = frozenset(self._listeners.departing_executor_ids())
        if self._listeners.observe_batch is not None:
            self._listeners.observe_batch(batch)
        self._index.apply(batch)
        if self._retries.pending_ids:
            self._retries.forget_seen(batch.seen_executor_ids())
        with self._lock:
            # Never hand out an id the driver or the cluster already has (e.g. after a restart).
            self._ids.at_least(max(max(known, default=0), self._index.max_executor_id))
            now = self._clock.now()
            pace = self._pacer.decision(now)
            inputs = RoundInput(
                batch=batch,
                targets=dict(self._targets),
                now=now,
                limits=self._limits
                if pace.size == self._limits.batch_size
                else attrs.evolve(self._limits, batch_size=pace.size),
                newly_created=self._newly_created,
                scheduler_known_newly_created=self._known_newly_created,
                deleted=self._deleted,
                counted_failures=self._counted_failures,
                scheduler_known=known,
                departing=departing,
                pvcs_exhausted=self._pvc_policy.exhausted(self._creator.pvc_counter),
                index=self._index,
            )
        plan = plan_round(inputs)
        results = self._apply(plan, batch, pace)
        self._failures.check()
        self._throttling.observe(results)
        if not self._pacer.adaptive:
            self._pacer.record(results, self._clock.now())  # counts the 429s (status)
        else:
            created = sum(1 for r in results if r.creation.created)
            missing = sum(max(c.target - c.pod_count, 0) for c in plan.profiles) - created
            with self._lock:
                stopped = self._stopped
            if not stopped:
                self._pacer.after_round(results, pace, missing=missing, now=self._clock.now())

    def _apply(self, plan: AllocationPlan, batch: SnapshotBatch, pace: BatchDecision) -> list[CreateResult]:
        with self._lock:
            self._newly_created = dict(plan.newly_created)
            self._known_newly_created = dict(plan.scheduler_known_newly_created)
            self._deleted = plan.deleted
            self._counted_failures = plan.counted_failures
        if plan.new_failures:
            log.warning("%d new failed executors (%s).", len(plan.new_failures), _ids(plan.new_failures))
            self._failures.register_failure(len(plan.new_failures))
            self._failures.check()  # before requesting replacements for executors that keep failing
        _warn_unseen(plan)
        if plan.timed_out is not None:
            self._delete_timed_out(plan.timed_out.executor_ids)
        pending_kept = 0
        all_deleted = True
        for excess in plan.excess:
            if self._delete_excess(excess):
                continue
            all_deleted = False
            pending_kept += len(excess.pending_ids)
        with self._lock:
            may_request = not self._stopped
        may_request = may_request and not self._failures.exhausted
        if plan.requests and may_request and not self._retries.may_create():
            self._wake_after_backoff()
            may_request = False
        results: list[CreateResult] = []
        if plan.requests and may_request and pace.may_create:
            if all_deleted:
                pvcs_in_use = claim_names_in_use(batch)
                requests = plan.requests
                if self.quota is not None:
                    with self._lock:
                        profiles = dict(self._profiles)
                    requests = self.quota.cap(requests, profiles)
                for request in requests:
                    profile = self._profiles[request.rp_id]
                    first = len(results)
                    self._requests.request(request, profile, pvcs_in_use, pace.concurrency, results)
                    if self.quota is not None:  # the pods its view does not count yet, refusals over quota
                        self.quota.created(request.rp_id, [r.creation for r in results[first:]])
            else:
                # The plan counted on those deletions to free pending slots; decide again next round.
                log.info("Not requesting executors this round: an excess pod deletion failed.")
        with self._lock:
            self._outstanding = plan.pending_unknown + pending_kept + len(self._newly_created)
        if any(r.creation.retryable for r in results):
            self._wake_after_backoff()
        return results

    def _wake_after_backoff(self) -> None:
        """Run a round as soon as the create back-off ends, when that comes before the next regular round:
        recovery then follows the API's healing by the back-off's cap, not by a batch delay more."""
        wait = self._retries.retry_in()
        if self._scheduler is None or wait >= self._settings.batch_delay:
            return
        with self._lock:
            if self._stopped or self._wakeup is not None:
                return
            self._wakeup = self._scheduler.schedule(wait, self._woken)

    def _woken(self) -> None:
        with self._lock:
            self._wakeup = None
            if self._stopped:
                return
        self._round_now()

    def _round_now(self) -> None:
        """Run a round now, off schedule: a delivery to the allocator alone. The store's other
        subscribers (lifecycle, disruptions, progress, the monitor) read many pods at each delivery
        and keep their own cadence; nothing of theirs waits for an allocation round."""
        subscription = self._subscription
        if subscription is None:
            self._store.notify_subscribers()  # not started: no round of ours to run yet
        else:
            subscription.notify()

    def _delete_timed_out(self, executor_ids: tuple[int, ...]) -> None:
        log.warning(
            "Executors with ids %s were not detected in the Kubernetes cluster after %d ms despite the "
            "fact that a previous allocation attempt tried to create them. The executors may have been "
            "deleted but the application missed the deletion event.",
            _ids(executor_ids),
            int(self._limits.pod_creation_timeout * 1000),
        )
        if self._settings.delete_on_termination:
            self._deletes.timed_out(executor_ids)

    def _delete_excess(self, excess: DeleteExcessPending) -> bool:
        ids = excess.executor_ids
        log.info("Deleting %d excess pod requests (%s).", len(ids), _ids(ids))
        deleted = self._deletes.excess(ids)
        if deleted:
            with self._lock:
                self._deleted = self._deleted | frozenset(ids)
                for executor_id in excess.newly_created_ids:
                    self._newly_created.pop(executor_id, None)
        return deleted

    # -- the allocator's state, for its executor requests -------------------------------------------

    def _is_stopped(self) -> bool:
        with self._lock:
            return self._stopped

    def _accept(self, executor_id: int, request: NewRequest) -> bool:
        with self._lock:
            if self._stopped:
                return False
            self._newly_created[executor_id] = request
            return True


def _warn_unseen(plan: AllocationPlan) -> None:
    """Say which executors the plan counts as requested, or replaces, without ever having seen their pods."""
    if plan.lost_before_seen:
        log.warning(
            "Executors %s registered with the driver and were removed from it before their pods were "
            "ever observed; they count as requested until a pod list shows whether their pods still "
            "exist (a killed executor's pod may), and are replaced once it shows they do not.",
            _ids(plan.lost_before_seen),
        )
    if plan.vanished:
        log.warning(
            "Executors %s were created, but a full list of the pods taken since no longer has them: "
            "they were deleted before any watch event about them arrived. They will be replaced.",
            _ids(plan.vanished),
        )


def _ids(ids: Collection[int]) -> str:
    return ",".join(str(i) for i in ids)
