"""Which executor pods should tell cluster autoscalers "not me": a pure decision on the driver's facts.

An executor that runs tasks, holds cached RDD blocks or holds live shuffle outputs costs the application
work when its node is scaled away: its tasks are retried, its blocks recomputed and, without an external
shuffle service, every stage that reads its shuffle files is rerun. Such an executor's pod carries three
annotations that the common autoscalers read:

- ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` (Kubernetes Cluster Autoscaler);
- ``karpenter.sh/do-not-disrupt: "true"`` (Karpenter);
- a high ``controller.kubernetes.io/pod-deletion-cost`` (ReplicaSet scale-down picks cheaper pods first).

An idle executor holding nothing has them removed, so the autoscaler may take its node. The current
state is read from the pod's own annotations (so a restarted driver sees what an earlier one wrote),
overridden by what was sent and not yet seen back from the watch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from k8s_backend.snapshots.states import ExecutorPodState

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@attrs.frozen
class ExecutorActivity:
    """What the driver knows of one executor's work: running tasks, cached blocks, live shuffle outputs."""

    tasks: int = 0
    rdd_blocks: int = 0
    shuffle: bool = False

    @property
    def holds_work(self) -> bool:
        return self.tasks > 0 or self.rdd_blocks > 0 or self.shuffle

    def describe(self) -> str:
        parts = [
            f"{self.tasks} running task(s)" if self.tasks else "",
            f"{self.rdd_blocks} cached block(s)" if self.rdd_blocks else "",
            "shuffle outputs" if self.shuffle else "",
        ]
        return ", ".join(p for p in parts if p) or "idle, holds no blocks"


@attrs.frozen
class HintChange:
    """Annotate (``protect``) or un-annotate one executor pod, and why."""

    executor_id: int
    pod_name: str
    protect: bool
    why: str


def hint_annotations(protect: bool, deletion_cost: int | None) -> dict[str, str | None]:
    """The metadata.annotations of a merge patch: set the hints, or remove them (``None``). Without a
    ``deletion_cost`` the pod-deletion-cost is not touched (the Deployment allocator owns it)."""
    if not protect:
        patch: dict[str, str | None] = {SAFE_TO_EVICT: None, DO_NOT_DISRUPT: None, DELETION_COST: None}
    else:
        patch = {SAFE_TO_EVICT: "false", DO_NOT_DISRUPT: "true", DELETION_COST: str(deletion_cost)}
    if deletion_cost is None:
        del patch[DELETION_COST]
    return patch


def is_annotated(state: ExecutorPodState) -> bool:
    """Whether the pod carries the hints (as this module writes them)."""
    annotations = state.metadata.get("annotations") or {}
    return annotations.get(SAFE_TO_EVICT) == "false"


def decide_hints(
    pods: Iterable[ExecutorPodState],
    activity: Mapping[str, ExecutorActivity],
    sent: Mapping[int, bool],
    *,
    limit: int,
) -> tuple[HintChange, ...]:
    """The changes to make now, at most ``limit``: protections first (losing work costs more than an
    idle node kept a little longer), then by executor id.

    Pods that end or are being deleted are left alone, and so are executors the driver does not list
    (not registered yet, or already gone): with no facts there is nothing to change.
    """
    changes: list[HintChange] = []
    for state in pods:
        facts = activity.get(str(state.executor_id))
        if facts is None or state.phase.is_final or state.metadata.get("deletionTimestamp"):
            continue
        current = sent.get(state.executor_id, is_annotated(state))
        if facts.holds_work != current:
            changes.append(HintChange(state.executor_id, state.name, facts.holds_work, facts.describe()))
    changes.sort(key=lambda c: (not c.protect, c.executor_id))
    return tuple(changes[: max(0, limit)])
