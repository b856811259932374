"""OOM-aware replacements, the pure part: which ended executors were OOM-killed, and how much memory
overhead the replacements of their resource profile get.

After each OOM kill (exit 137 with the container's reason ``OOMKilled``) the profile's overhead is the
configured one times ``factor ** ooms``, bounded by ``max_factor``. Only the pod's memory grows: Spark's
heap (``spark.executor.memory``) and its own accounting stay as configured. :class:`OomBoosts` is
immutable; every OOM makes a new one.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from k8s_backend.lifecycle import explain
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

log = logging.getLogger(__name__)

OOM_EXIT_CODE = 137


def oom_killed(state: ExecutorPodState, container_name: str) -> bool:
    """Whether the executor's container was killed by the kernel for exceeding its memory limit."""
    if state.phase not in (PodPhase.FAILED, PodPhase.DELETED):
        return False
    code = explain.exit_code_of(state.pod, container_name)
    return code == OOM_EXIT_CODE and explain.termination_reason(state.pod, container_name) == "OOMKilled"


@attrs.frozen
class OomSettings:
    """``factor``: the overhead's multiplier per OOM (1.0: off); ``max_factor``: its bound."""

    factor: float = 1.0
    max_factor: float = 2.0

    @property
    def enabled(self) -> bool:
        return self.factor > 1.0 and self.max_factor > 1.0


def _frozen(value: Mapping[int, int]) -> Mapping[int, int]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


@attrs.frozen
class OomRaise:
    """What one OOM changed, for the loss reason, status() and the log."""

    executor_id: int
    rp_id: int
    ooms: int
    factor: float
    base_overhead_mib: int
    overhead_mib: int

    def describe(self) -> str:
        return (
            f"OOM-aware replacement: memory overhead of resource profile {self.rp_id} raised from "
            f"{self.base_overhead_mib} MiB to {self.overhead_mib} MiB (x{self.factor:g} after {self.ooms} "
            f"OOM kill{'s' if self.ooms != 1 else ''}); the heap stays as configured"
        )


@attrs.frozen
class OomBoosts:
    """OOM kills counted per resource profile, and the executors already counted (each counts once)."""

    ooms: Mapping[int, int] = attrs.field(factory=dict, converter=_frozen)
    counted: frozenset[int] = frozenset()

    def factor(self, rp_id: int, settings: OomSettings) -> float:
        count = self.ooms.get(rp_id, 0)
        if not settings.enabled or count == 0:
            return 1.0
        return min(settings.factor**count, settings.max_factor)

    def overhead_mib(self, rp_id: int, base_mib: int, settings: OomSettings) -> int:
        """The overhead a new pod of the profile gets (``base_mib`` when nothing was raised)."""
        return math.ceil(base_mib * self.factor(rp_id, settings))

    def after_oom(
        self, executor_id: int, rp_id: int, base_mib: int, settings: OomSettings
    ) -> tuple[OomBoosts, OomRaise | None]:
        """Count an OOM kill; the new boosts and what was raised (None: counted before, or off)."""
        if executor_id in self.counted or not settings.enabled:
            return self, None
        ooms = {**self.ooms, rp_id: self.ooms.get(rp_id, 0) + 1}
        boosts = OomBoosts(ooms, self.counted | {executor_id})
        factor = boosts.factor(rp_id, settings)
        raised = OomRaise(
            executor_id, rp_id, ooms[rp_id], factor, base_mib, boosts.overhead_mib(rp_id, base_mib, settings)
        )
        return boosts, raised


class OomBooster:
    """Keeps the :class:`OomBoosts` between batches (replaced whole under a lock: the lifecycle thread
    counts, the allocator's thread reads) and says what each OOM raised.

    ``base_overhead``: the configured overhead (MiB) of a resource profile's executors.
    """

    def __init__(
        self, settings: OomSettings, *, container_name: str, base_overhead: Callable[[int], int]
    ) -> None:
        self.settings = settings
        self._container = container_name
        self.base_overhead = base_overhead  # the composition root may swap it once profiles are known
        self._lock = threading.Lock()
        self._boosts = OomBoosts()
        self.raises: collections.deque[OomRaise] = collections.deque(maxlen=20)
        self._untold: dict[int, OomRaise] = {}  # raises whose executor's loss was not reported yet

    def observe_batch(self, batch: SnapshotBatch) -> None:
        """Observe every update of a batch (the allocator does, before its round: the replacement it
        requests for an OOM-killed executor must already get the raise)."""
        for state in batch.updates:
            self.observe(state)

    def take(self, executor_id: int) -> OomRaise | None:
        """What the executor's OOM raised, once: for its loss reason."""
        with self._lock:
            return self._untold.pop(executor_id, None)

    def observe(self, state: ExecutorPodState) -> OomRaise | None:
        """Count the executor if its pod was OOM-killed; what was raised, once per executor."""
        if not self.settings.enabled or not oom_killed(state, self._container):
            return None
        rp_id = state.resource_profile_id
        base = self.base_overhead(rp_id)
        with self._lock:
            self._boosts, raised = self._boosts.after_oom(state.executor_id, rp_id, base, self.settings)
        if raised is not None:
            with self._lock:
                self._untold[state.executor_id] = raised
            self.raises.append(raised)
            log.warning(
                "Executor %d was OOM-killed (exit 137, OOMKilled). %s.", state.executor_id, raised.describe()
            )
        return raised

    def overhead_mib(self, rp_id: int, base_mib: int) -> int:
        with self._lock:
            boosts = self._boosts
        return boosts.overhead_mib(rp_id, base_mib, self.settings)

    def status(self) -> dict[str, Any]:
        with self._lock:
            boosts = self._boosts
        return {
            "factor": self.settings.factor,
            "max_factor": self.settings.max_factor,
            "profiles": {
                str(rp): {"ooms": n, "factor": boosts.factor(rp, self.settings)}
                for rp, n in boosts.ooms.items()
            },
            "recent": [attrs.asdict(r) | {"reason": r.describe()} for r in tuple(self.raises)],
        }
