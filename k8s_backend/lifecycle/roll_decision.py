"""Whether to roll an executor now, and which: a pure decision on the driver's executor summaries.

Spark's ExecutorRollPlugin decommissions its choice every interval, whatever else is going on. Here the
roll is also skipped, with the reason, while an executor is already on its way out (rolled earlier or
decommissioned on a disruption notice) and while fewer executors are alive than the target: rolling then
would take the application below the executor count it asked for, since the last roll's replacement has
not registered yet. So at most one executor is decommissioning by a roll at any time.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from k8s_backend.lifecycle.roll_policy import DRIVER_ID, ExecutorSummary, PolicyHook, RollPolicy, choose


@attrs.frozen
class RollDecision:
    """Roll ``executor_id`` (when not None), or skip; ``reason`` says why either way."""

    executor_id: str | None
    reason: str

    @property
    def rolls(self) -> bool:
        return self.executor_id is not None


def policy_name(policy: RollPolicy | PolicyHook) -> str:
    """How logs and status() name a policy: Spark's name, or the hook's qualified name."""
    if isinstance(policy, RollPolicy):
        return policy.value
    module = getattr(policy, "__module__", None) or "?"
    return f"python:{module}:{getattr(policy, '__qualname__', repr(policy))}"


def decide_roll(
    summaries: Sequence[ExecutorSummary],
    policy: RollPolicy | PolicyHook,
    *,
    min_tasks: int,
    target: int,
    departing: frozenset[str] = frozenset(),
) -> RollDecision:
    """The roll for this interval.

    ``summaries``: the driver's active executors (the driver's own entry is ignored); ``target``: the
    executor count asked for; ``departing``: executors being decommissioned (by earlier rolls or on a
    disruption notice). A hook that raises or names a non-candidate is a skip whose reason says so.
    """
    executors = [s for s in summaries if s.id != DRIVER_ID]
    leaving = sorted(departing & {s.id for s in executors}, key=_numeric_first)
    if leaving:
        return RollDecision(
            None, f"executor {', '.join(leaving)} is still decommissioning; one executor is rolled at a time"
        )
    if len(executors) < target:
        return RollDecision(
            None,
            f"{len(executors)} executors alive, fewer than the target of {target}: rolling now would go "
            "below it (a replacement has not registered yet)",
        )
    try:
        chosen = choose(executors, policy, min_tasks)
    except Exception as error:  # the user's hook: its failure is this interval's skip, not the roller's end
        return RollDecision(None, f"the roll policy {policy_name(policy)} failed: {error!r}")
    if chosen is None:
        return RollDecision(None, _nothing_to_roll(executors, policy, min_tasks))
    candidates = sum(1 for s in executors if s.total_tasks >= min_tasks)
    return RollDecision(
        chosen, f"chosen by policy {policy_name(policy)} among {candidates} candidate executors"
    )


def _nothing_to_roll(
    executors: Sequence[ExecutorSummary], policy: RollPolicy | PolicyHook, min_tasks: int
) -> str:
    if not executors:
        return "There is nothing to roll: no executor is alive"
    if all(s.total_tasks < min_tasks for s in executors):
        return (
            f"There is nothing to roll: no executor has run {min_tasks} tasks yet "
            "(minTasksPerExecutorBeforeRolling)"
        )
    return f"There is nothing to roll: policy {policy_name(policy)} chose none"


def _numeric_first(executor_id: str) -> tuple[int, str]:
    return (int(executor_id), "") if executor_id.isdigit() else (2**63, executor_id)
