"""The ``direct`` executor pod allocator: pure round decisions (policy, pvcs, failures) and their I/O."""

from k8s_backend.allocation.allocator import ExecutorPodsAllocator
from k8s_backend.allocation.failures import ExecutorFailureTracker
from k8s_backend.allocation.policy import split_slots

__all__ = ["ExecutorFailureTracker", "ExecutorPodsAllocator", "split_slots"]
