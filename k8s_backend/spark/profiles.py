"""Executor requests from the JVM: targets per resource profile, and each profile's executor size.

The bridge sends one JSON document per ``doRequestTotalExecutors`` call (see ``Profiles.java``):
``{"targets": {"<id>": n}, "profiles": [{"id": .., "cores": .., "memoryMiB": .., ...}]}``. Sizes come
from Spark's ``ResourceProfile.getResourcesForClusterManager`` (defaults filled in from the Spark
conf). The memory overhead is passed on only when the profile or the conf sets it explicitly, so the
pod builder computes a default overhead the same way for every profile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend.conf.model import ResourceProfile, ResourceRequest

_EXPLICIT_OVERHEAD_KEY = "spark.executor.memoryOverhead"


@attrs.frozen
class ExecutorRequest:
    """One request: the total executors wanted per profile id, and the profiles it mentions."""

    targets: Mapping[int, int]
    profiles: tuple[ResourceProfile, ...] = ()

    def custom_profiles(self) -> tuple[ResourceProfile, ...]:
        """The profiles other than the default one (whose size the backend reads from its conf)."""
        return tuple(p for p in self.profiles if p.id != 0)


def parse_request(text: str, conf: Mapping[str, str] | None = None) -> ExecutorRequest:
    """Parse the bridge's JSON; ``conf`` supplies ``spark.executor.memoryOverhead`` if set."""
    data = json.loads(text)
    targets = {int(k): int(v) for k, v in data.get("targets", {}).items()}
    profiles = tuple(profile_from_description(p, conf or {}) for p in data.get("profiles", []))
    return ExecutorRequest(targets=targets, profiles=profiles)


def profile_from_description(desc: Mapping[str, Any], conf: Mapping[str, str]) -> ResourceProfile:
    """One profile description from the JVM as the backend's :class:`ResourceProfile`."""
    requests: Mapping[str, Mapping[str, Any]] = desc.get("executorRequests", {})
    overhead: int | None = None
    if "memoryOverhead" in requests:
        overhead = int(requests["memoryOverhead"]["amount"])
    elif conf.get(_EXPLICIT_OVERHEAD_KEY):
        # Spark falls back to the conf's explicit overhead for every profile; so does the overhead
        # computed in the JVM, so take its figure rather than re-parse the size here.
        overhead = int(desc["memoryOverheadMiB"])
    custom = tuple(
        ResourceRequest(
            name=name,
            amount=int(req["amount"]),
            vendor=str(req.get("vendor") or ""),
            discovery_script=str(req.get("discoveryScript") or ""),
        )
        for name, req in sorted(desc.get("customResources", {}).items())
    )
    task_cpus = desc.get("taskRequests", {}).get("cpus")
    cores = desc.get("cores")
    return ResourceProfile(
        id=int(desc["id"]),
        cores=int(cores) if cores is not None else 1,
        memory_mib=int(desc["memoryMiB"]),
        memory_overhead_mib=overhead,
        offheap_mib=int(desc.get("memoryOffHeapMiB", 0)),
        pyspark_memory_mib=int(desc.get("pysparkMemoryMiB", 0)),
        custom_resources=custom,
        task_cpus=int(float(task_cpus)) if task_cpus is not None else 1,
    )
