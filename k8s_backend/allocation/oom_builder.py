"""The pod builder of OOM-aware replacements: new executor pods of a profile whose executors were
OOM-killed get the raised memory overhead (:mod:`k8s_backend.lifecycle.oom`); everything else is the
wrapped builder's."""

from __future__ import annotations

import attrs

from k8s_backend.allocation.creator import PodSpecBuilder
from k8s_backend.conf.model import ExecutorPodConf
from k8s_backend.lifecycle.oom import OomBooster
from k8s_backend.pods.builder import ExecutorPodSpec
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.pods.resources import memory_overhead_mib


class OomAwarePodBuilder:
    """Builds with the profile's memory overhead raised after OOM kills (the heap is left alone)."""

    def __init__(self, inner: PodSpecBuilder, booster: OomBooster, pod_conf: ExecutorPodConf) -> None:
        self._inner = inner
        self._booster = booster
        self._pod_conf = pod_conf

    def base_overhead_mib(self, request: ExecutorPodRequest) -> int:
        return memory_overhead_mib(request.resource_profile, self._pod_conf)

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
        profile = request.resource_profile
        base = memory_overhead_mib(profile, self._pod_conf)
        raised = self._booster.overhead_mib(profile.id, base)
        if raised != base:
            request = attrs.evolve(
                request, resource_profile=attrs.evolve(profile, memory_overhead_mib=raised)
            )
        return self._inner.build(request)
