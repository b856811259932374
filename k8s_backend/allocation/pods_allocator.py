"""What the backend needs of an allocator (Spark's AbstractPodsAllocator).

Two implementations: :class:`k8s_backend.allocation.allocator.ExecutorPodsAllocator` (``direct``) and
:class:`k8s_backend.allocation.owner_allocator.OwnerPodsAllocator` (``statefulset``/``deployment``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Protocol

from k8s_backend.conf.model import ResourceProfile


class PodsAllocator(Protocol):
    """Targets in, executor pods out."""

    def start(self) -> None:
        """Start allocating."""
        ...

    def halt(self) -> None:
        """Stop changing anything; calls afterwards do nothing."""
        ...

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        """Make a resource profile known so targets can name it."""
        ...

    def set_total_expected_executors(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> None:
        """Set the executor target of each resource profile id (profiles not named keep theirs)."""
        ...

    def mark_for_removal(self, executor_ids: Collection[int]) -> None:
        """Spark is about to remove these executors (a controller may then pick their pods first)."""
        ...

    def delete_owned(self) -> None:
        """At stop, delete what the allocator owns besides the executor pods (nothing for ``direct``)."""
        ...

    def generate_executor_id(self, pod_name: str) -> int:
        """Spark's GenerateExecID: a new id for the executor of ``pod_name`` (whose id is ``EXECID``)."""
        ...

    def profile(self, rp_id: int) -> ResourceProfile | None:
        """The resource profile of this id, if it was registered."""
        ...

    def is_deleted(self, executor_id: int) -> bool:
        """Whether the allocator deleted this executor's pod as excess (the driver refuses it)."""
        ...

    @property
    def outstanding_pods(self) -> int:
        """Executor pods asked for and not yet seen."""
        ...

    @property
    def pvc_counter(self) -> int:
        """How many PVCs this allocator created."""
        ...

    def advance_executor_id_counter(self, min_next: int) -> None:
        """Make the next executor id at least ``min_next`` (after a restart: never reuse an id)."""
        ...

    def status(self) -> dict[str, Any]:
        """A JSON-friendly view for diagnostics; ``targets`` maps profile ids to targets."""
        ...
