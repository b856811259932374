"""What the allocator is built from: its settings (from the configuration), who it allocates for, and
whom it tells."""

from __future__ import annotations

from collections.abc import Callable, Collection

import attrs

from k8s_backend.allocation.adaptive import AdaptiveSettings
from k8s_backend.allocation.policy import AllocationLimits
from k8s_backend.allocation.pvcs import PvcReusePolicy
from k8s_backend.conf.model import KubernetesConf, ResourceProfile
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle.executor_events import NO_EVENTS, ExecutorEvents
from k8s_backend.snapshots.snapshot import SnapshotBatch


@attrs.frozen
class AllocatorSettings:
    """The configuration the allocator acts on, read once from the application's conf."""

    namespace: str
    default_profile: ResourceProfile
    limits: AllocationLimits = attrs.field(factory=AllocationLimits)
    pvc_policy: PvcReusePolicy = attrs.field(factory=PvcReusePolicy)
    batch_delay: float = 1.0  # spark.kubernetes.allocation.batch.delay
    max_failures: int = 3  # spark.executor.maxNumFailures
    failures_validity_interval: float | None = None  # spark.executor.failuresValidityInterval
    delete_on_termination: bool = True  # spark.kubernetes.executor.deleteOnTermination
    maximum: int = 2**31 - 1  # spark.kubernetes.allocation.maximum: executor ids handed out, at most
    adaptive: AdaptiveSettings | None = None  # spark.kubernetes.allocation.batch.adaptive (None: off)
    concurrency: int = 1  # creates in flight with fixed batches (...allocation.batch.concurrency)

    @classmethod
    def from_conf(cls, conf: KubernetesConf) -> AllocatorSettings:
        allocation = conf.allocation
        adaptive = (
            AdaptiveSettings(
                initial=allocation.batch_size,
                batch_delay=allocation.batch_delay,
                concurrency=allocation.concurrency,
            )
            if allocation.adaptive
            else None
        )
        return cls(
            namespace=conf.namespace,
            default_profile=conf.executor.default_profile,
            limits=AllocationLimits.from_conf(conf),
            pvc_policy=PvcReusePolicy.from_conf(conf),
            batch_delay=conf.allocation.batch_delay,
            max_failures=conf.max_executor_failures,
            failures_validity_interval=conf.lifecycle.failures_validity_interval,
            delete_on_termination=conf.lifecycle.delete_on_termination,
            maximum=allocation.maximum,
            adaptive=adaptive,
            concurrency=max(1, allocation.concurrency),
        )


@attrs.frozen
class AllocatorIdentity:
    """Whose executors are created, and what every executor pod refers to."""

    app_id: str
    driver_url: str
    pod_name_prefix: str
    driver_pod: Obj | None = None  # owner of the executor pods (and of reusable claims)
    config_map_name: str | None = None  # the executor config map, when one is created
    auth_secret_name: str | None = None  # the Secret with the RPC auth secret, when one is created


def _no_known_executors() -> Collection[int]:
    return frozenset()


@attrs.frozen
class AllocatorListeners:
    """What the allocator asks (the executor ids the driver knows) and tells about each executor."""

    known_executor_ids: Callable[[], Collection[int]] = _no_known_executors
    events: ExecutorEvents = NO_EVENTS  # told of each executor requested (and why), or whose pod was refused
    # Executors decommissioned on the cluster's notice: replaced at once (the disruption watcher's).
    departing_executor_ids: Callable[[], Collection[int]] = _no_known_executors
    # Sees each batch before the round (OOM-aware replacements count OOM kills before replacing them).
    observe_batch: Callable[[SnapshotBatch], None] | None = None
