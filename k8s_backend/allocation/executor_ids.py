"""Executor ids: handed out in order, never reused, and at most ``spark.kubernetes.allocation.maximum``
over the application's life (ids from before a restart count: recovery moves the counter past them)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from k8s_backend.conf.model import ResourceProfile

log = logging.getLogger(__name__)

MAXIMUM_KEY = "spark.kubernetes.allocation.maximum"


class ExecutorIds:
    """The executor id counter (thread-safe)."""

    def __init__(self, maximum: int = 2**31 - 1) -> None:
        self._maximum = maximum
        self._lock = threading.Lock()
        self._last = 0
        self.maximum_reached = False

    @property
    def last(self) -> int:
        """The last id handed out (or seen)."""
        with self._lock:
            return self._last

    @property
    def exhausted(self) -> bool:
        """Whether the maximum is reached: :meth:`next` hands out nothing more."""
        with self._lock:
            return self._last >= self._maximum

    def at_least(self, last: int) -> None:
        """Never hand out ``last`` or below (ids the driver, the cluster or an earlier driver used)."""
        with self._lock:
            self._last = max(self._last, last)

    def next(self) -> int | None:
        """A new id, or None once the maximum is reached (said once, at WARNING, naming the key)."""
        with self._lock:
            if self._last < self._maximum:
                self._last += 1
                return self._last
            first = not self.maximum_reached
            self.maximum_reached = True
        if first:
            log.warning(
                "Not creating more executor pods: this application has created %d, the most %s allows. "
                "Raise it to let executors be added or replaced.",
                self._maximum,
                MAXIMUM_KEY,
            )
        return None


def check_targets(
    targets: Mapping[int, int],
    profiles: Mapping[int, ResourceProfile] | None,
    known: Mapping[int, ResourceProfile],
) -> None:
    """Raise a ValueError naming the profile for a target of an unknown profile, a target that is not an
    int >= 0, or a profile given under another id."""
    for rp_id, target in targets.items():
        if rp_id not in known:
            raise ValueError(
                f"resource profile {rp_id} is unknown: pass its ResourceProfile in profiles= or "
                "call register_resource_profile() first"
            )
        if not isinstance(target, int) or target < 0:
            raise ValueError(
                f"the executor target of resource profile {rp_id} must be an int >= 0, got {target!r}"
            )
    for rp_id, profile in (profiles or {}).items():
        if profile.id != rp_id:
            raise ValueError(
                f"profiles[{rp_id}] is the ResourceProfile with id {profile.id}: "
                "the key must be the profile's id"
            )
