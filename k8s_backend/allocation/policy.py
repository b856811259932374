"""The allocation round as a pure decision: observed pods + bookkeeping + targets + time -> a plan.

Nothing here talks to Kubernetes, sleeps or starts threads; :mod:`k8s_backend.allocation.allocator`
gathers the inputs, calls :func:`plan_round` and applies the plan through the Kubernetes port. The rules
are Spark's ExecutorPodsAllocator.onNewSnapshots, plus the improvements noted where they apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from k8s_backend.allocation.pod_index import PodIndex
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

T = TypeVar("T")


def _frozen_map(value: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


def split_slots(candidates: Sequence[T], slots: int) -> list[tuple[T, int]]:
    """Share ``slots`` among ``candidates`` in order: the first ``slots % n`` get one more (SPARK-36052)."""
    if not candidates:
        return []
    share, extra = divmod(max(slots, 0), len(candidates))
    return [(c, share + 1 if i < extra else share) for i, c in enumerate(candidates)]


@attrs.frozen
class NewRequest:
    """A pod the allocator created and has not yet seen in any snapshot.

    ``resource_version``: the pod's resourceVersion in the create's answer (None when unknown): a full
    list at that version or later has the pod unless it was deleted since.
    """

    rp_id: int
    created_at: float
    resource_version: int | None = None


@attrs.frozen
class AllocationLimits:
    """The numbers that bound an allocation round (all durations in seconds)."""

    batch_size: int = 20
    max_pending_pods: int = 2**31 - 1
    max_pending_pods_per_rp: int = 2**31 - 1
    pod_creation_timeout: float = 600.0
    executor_idle_timeout: float = 60.0

    @classmethod
    def from_conf(cls, conf: KubernetesConf) -> AllocationLimits:
        allocation = conf.allocation
        return cls(
            batch_size=allocation.batch_size,
            max_pending_pods=allocation.max_pending_pods,
            max_pending_pods_per_rp=allocation.max_pending_pods_per_rp,
            pod_creation_timeout=allocation.pod_creation_timeout,
            executor_idle_timeout=conf.scaling.executor_idle_timeout,
        )


@attrs.frozen
class RoundInput:
    """Everything one round decides from.

    ``newly_created`` is in creation order (the oldest requests are chosen first as excess);
    ``scheduler_known`` are the executor ids the driver has registered; ``pvcs_exhausted`` is true when
    PVC-oriented allocation is on and every allowed PVC exists (Spark's ``maxPVCs <= PVC_COUNTER``).
    """

    batch: SnapshotBatch
    targets: Mapping[int, int] = attrs.field(converter=_frozen_map)
    now: float
    limits: AllocationLimits = AllocationLimits()
    newly_created: Mapping[int, NewRequest] = attrs.field(factory=dict, converter=_frozen_map)
    scheduler_known_newly_created: Mapping[int, NewRequest] = attrs.field(factory=dict, converter=_frozen_map)
    deleted: frozenset[int] = frozenset()
    counted_failures: frozenset[int] = frozenset()
    scheduler_known: frozenset[int] = frozenset()
    # Executors being decommissioned on the cluster's notice (a drain, an eviction, an autoscaler's
    # taint): still alive, but no longer counted, so their replacements are requested at once.
    departing: frozenset[int] = frozenset()
    pvcs_exhausted: bool = False
    # The allocator's incrementally kept index of the batch's snapshot; None: built here (O(pods)).
    index: PodIndex | None = attrs.field(default=None, eq=False)


@attrs.frozen
class DeleteTimedOutRequests:
    """Requests never seen within the pod creation timeout: give them up and delete any such pod."""

    executor_ids: tuple[int, ...]


@attrs.frozen
class DeleteExcessPending:
    """Excess requests and unknown pending pods of one profile, protected for the idle timeout."""

    rp_id: int
    newly_created_ids: tuple[int, ...]
    pending_ids: tuple[int, ...]

    @property
    def executor_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.newly_created_ids + self.pending_ids))


@attrs.frozen
class RequestExecutors:
    """Create ``count`` executor pods for one profile. The other fields explain the number (logs)."""

    rp_id: int
    count: int
    target: int = 0
    known: int = 0
    shared_slots: int = 0


@attrs.frozen
class ProfileCounts:
    """What one profile looked like in this round (before any deletion)."""

    rp_id: int
    target: int
    running: int
    pending_unknown: int
    pending_known: int
    newly_created: int
    known_newly_created: int
    unknown_phase: int

    @property
    def not_running(self) -> int:
        return (
            self.pending_unknown
            + self.pending_known
            + self.newly_created
            + self.known_newly_created
            + self.unknown_phase
        )

    @property
    def pod_count(self) -> int:
        return self.running + self.not_running


@attrs.frozen
class AllocationPlan:
    """The outcome of one round.

    The bookkeeping fields are the state after reconciling with what was observed and before any
    action; the allocator then applies the actions and adjusts the bookkeeping for those that succeed
    (a successful excess deletion marks its ids deleted and drops its requests). ``requests`` assume
    every excess deletion succeeds. ``pending_unknown`` counts the unknown pending pods left once the
    excess deletions succeed (Spark's totalPendingCount).
    """

    newly_created: Mapping[int, NewRequest] = attrs.field(converter=_frozen_map)
    scheduler_known_newly_created: Mapping[int, NewRequest] = attrs.field(converter=_frozen_map)
    deleted: frozenset[int]
    counted_failures: frozenset[int]
    new_failures: tuple[int, ...] = ()
    lost_before_seen: tuple[int, ...] = ()
    vanished: tuple[int, ...] = ()
    timed_out: DeleteTimedOutRequests | None = None
    excess: tuple[DeleteExcessPending, ...] = ()
    requests: tuple[RequestExecutors, ...] = ()
    pending_unknown: int = 0
    profiles: tuple[ProfileCounts, ...] = ()

    @property
    def outstanding(self) -> int:
        """Spark's numOutstandingPods if every action succeeds and no request is made."""
        return (
            self.pending_unknown
            + len(self.newly_created)
            - sum(len(e.newly_created_ids) for e in self.excess)
        )


def is_idle_timed_out(state: ExecutorPodState, now: float, idle_timeout: float) -> bool:
    """Whether a pending pod is older than the idle timeout; an unparsable timestamp counts as old."""
    created = state.creation_timestamp
    return created is None or now - created > idle_timeout  # SPARK-37049


def plan_round(inp: RoundInput) -> AllocationPlan:
    """Decide one allocation round (see the module docstring)."""
    # Over 60 lines: one round read top to bottom in Spark's order (onNewSnapshots): forget what snapshots
    # now show, count each profile, delete the excess, then decide the creates; the steps share the counts.
    batch, now, limits = inp.batch, inp.now, inp.limits
    seen = batch.seen_executor_ids()
    known = inp.scheduler_known

    # Requests seen in a snapshot are no longer requests: the snapshot counts them from now on.
    newly = {i: r for i, r in inp.newly_created.items() if i not in seen}
    known_newly = {i: r for i, r in inp.scheduler_known_newly_created.items() if i not in seen}
    # Registered with the driver but not seen yet: counted, never timed out, never deleted (SPARK-34361).
    for executor_id in [i for i in newly if i in known]:
        known_newly[executor_id] = newly.pop(executor_id)
    # The driver forgot an executor whose pod we never saw (SPARK-44609: Spark kept counting it forever).
    # That does not make its pod gone: a killed executor's pod lives on (a Pending one is never
    # force-deleted), and replacing it at once made 7 pods for a target of 5. It counts as a request
    # again: a snapshot shows the pod, or a full list taken after its create lacks it (just below) and
    # its slot is requested again, or the creation timeout deletes it.
    lost = tuple(i for i in known_newly if i not in known)
    for executor_id in lost:
        newly[executor_id] = known_newly.pop(executor_id)
    # Created, then deleted before any watch event reached us: a full list taken after the create lacks
    # it, so it is gone and its slot is requested again now, not after the creation timeout. A list
    # older than the create proves nothing: such a request keeps counting as pending (no over-allocation).
    vanished = _vanished(batch, newly)
    for executor_id in vanished:
        del newly[executor_id]

    timed_out = tuple(i for i, r in newly.items() if now - r.created_at > limits.pod_creation_timeout)
    for executor_id in timed_out:
        del newly[executor_id]

    pods_now = batch.snapshot.pods
    deleted = inp.deleted
    if batch.changed:
        deleted = frozenset(i for i in deleted if i in pods_now)  # forget deleted pods once they are gone
    index = inp.index if inp.index is not None else PodIndex.of(batch.snapshot)

    # A departing executor's end is the cluster's doing: neither counted as alive nor as a failure.
    uncounted = deleted | inp.departing if inp.departing else deleted
    new_failures = _new_failures(batch, index, uncounted, inp.counted_failures)
    # Fast path: with one profile every pod counts for it, whatever its label says.
    single_profile = len(inp.targets) <= 1
    every_profile = frozenset(index.profiles())

    excess: list[DeleteExcessPending] = []
    profiles: list[ProfileCounts] = []
    candidates: list[tuple[ProfileCounts, int]] = []  # (counts, not running after deletions)
    total_pending_unknown = 0
    total_not_running = 0
    for rp_id in sorted(inp.targets):
        target = inp.targets[rp_id]
        rps = every_profile if single_profile else frozenset({rp_id})
        pending = sorted(
            (pods_now[i] for i in index.ids(rps, PodPhase.PENDING) if i not in uncounted),
            key=lambda s: s.executor_id,
        )
        pending_unknown = [s for s in pending if s.executor_id not in known]
        newly_for_rp = [(i, r) for i, r in newly.items() if r.rp_id == rp_id]
        counts = ProfileCounts(
            rp_id=rp_id,
            target=target,
            running=_live_count(index, rps, PodPhase.RUNNING, uncounted),
            pending_unknown=len(pending_unknown),
            pending_known=len(pending) - len(pending_unknown),
            newly_created=len(newly_for_rp),
            known_newly_created=sum(1 for r in known_newly.values() if r.rp_id == rp_id),
            # Improvement: an Unknown pod (node unreachable) is alive until proven otherwise.
            unknown_phase=_live_count(index, rps, PodPhase.UNKNOWN, uncounted),
        )
        profiles.append(counts)
        pending_count = counts.pending_unknown
        not_running = counts.not_running

        if counts.pod_count > target:
            surplus = counts.pod_count - target
            # Only our own unregistered requests and unknown pending pods, each protected for the idle
            # timeout (SPARK-33099); running pods and pods the driver knows are never excess (SPARK-34361).
            newly_to_delete = [
                i for i, r in newly_for_rp if now - r.created_at > limits.executor_idle_timeout
            ][:surplus]
            pending_to_delete = [
                s.executor_id
                for s in pending_unknown
                if is_idle_timed_out(s, now, limits.executor_idle_timeout)
            ][: surplus - len(newly_to_delete)]  # SPARK-34334: what is left of the surplus
            if newly_to_delete or pending_to_delete:
                excess.append(DeleteExcessPending(rp_id, tuple(newly_to_delete), tuple(pending_to_delete)))
                pending_count -= len(pending_to_delete)
                not_running -= len(newly_to_delete) + len(pending_to_delete)

        total_pending_unknown += pending_count
        total_not_running += not_running
        # A profile waits for its previous batch to be seen, registered or timed out; pending pods do
        # not block it (SPARK-33262).
        if not newly_for_rp and counts.pod_count < target:
            candidates.append((counts, not_running))

    requests = _requests(inp, candidates, total_not_running)
    return AllocationPlan(
        newly_created=newly,
        scheduler_known_newly_created=known_newly,
        deleted=deleted,
        # Departing executors are remembered as counted: their end never counts, even once forgotten.
        counted_failures=inp.counted_failures | frozenset(new_failures) | inp.departing,
        new_failures=new_failures,
        lost_before_seen=lost,
        vanished=vanished,
        timed_out=DeleteTimedOutRequests(timed_out) if timed_out else None,
        excess=tuple(excess),
        requests=requests,
        pending_unknown=total_pending_unknown,
        profiles=tuple(profiles),
    )


def _vanished(batch: SnapshotBatch, newly: Mapping[int, NewRequest]) -> tuple[int, ...]:
    """The requests (not seen in ``batch``) that a full list taken at or after their create lacks."""
    list_rv = batch.resync_resource_version if batch.resynced else None
    if list_rv is None:
        return ()
    return tuple(
        i for i, r in newly.items() if r.resource_version is not None and r.resource_version <= list_rv
    )


def _live_count(index: PodIndex, rps: frozenset[int], phase: PodPhase, deleted: frozenset[int]) -> int:
    """Pods of ``rps`` in ``phase``, leaving out the ones this allocator deleted."""
    gone = sum(
        1
        for i in deleted
        if (where := index.phase_of(i)) is not None and where[1] is phase and where[0] in rps
    )
    return index.count(rps, phase) - gone


def _new_failures(
    batch: SnapshotBatch, index: PodIndex, deleted: frozenset[int], counted: frozenset[int]
) -> tuple[int, ...]:
    # The updates too: a pod that failed and vanished between two rounds still failed.
    failed = {s.executor_id for s in batch.updates if s.phase is PodPhase.FAILED}
    failed.update(index.ids(index.profiles(), PodPhase.FAILED))
    return tuple(sorted(i for i in failed if i not in deleted and i not in counted))


def _requests(
    inp: RoundInput, candidates: list[tuple[ProfileCounts, int]], total_not_running: int
) -> tuple[RequestExecutors, ...]:
    limits = inp.limits
    remaining = limits.max_pending_pods - total_not_running  # SPARK-36052: a global pending cap
    if remaining <= 0 or not candidates:
        return ()
    # Waiting for a PVC to be released: only a new observation can free one.
    if inp.pvcs_exhausted and not inp.batch.changed:
        return ()
    requests: list[RequestExecutors] = []
    for (counts, not_running), slots in split_slots(candidates, remaining):
        count = min(counts.target - counts.pod_count, limits.batch_size, slots)
        count = min(count, limits.max_pending_pods_per_rp - not_running)  # SPARK-53324
        if count > 0:
            requests.append(RequestExecutors(counts.rp_id, count, counts.target, counts.pod_count, slots))
    return tuple(requests)
