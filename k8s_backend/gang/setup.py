"""Which gang mechanism an application uses, decided once from its configuration."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.gang.gate import GangGate
from k8s_backend.gang.volcano import SCHEDULER_NAME as VOLCANO
from k8s_backend.gang.volcano import (
    VolcanoSettings,
    VolcanoStep,
    build_pod_group,
    load_template,
    multiply_quantities,
)
from k8s_backend.gang.yunikorn import SCHEDULER_NAME as YUNIKORN
from k8s_backend.gang.yunikorn import YuniKornSettings, YuniKornStep
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder, ExecutorPodRequest
from k8s_backend.pods.step import FeatureStep


@attrs.frozen
class GangSetup:
    steps: tuple[FeatureStep, ...] = ()
    volcano: VolcanoSettings | None = None
    gate: GangGate | None = None

    def pod_group(
        self, builder: ExecutorPodBuilder, *, app_id: str, driver_url: str, driver_pod: Obj | None
    ) -> Obj | None:
        """The Volcano PodGroup body, sized as ``minMember`` executors of the default profile."""
        if self.volcano is None:
            return None
        probe = builder.build(
            ExecutorPodRequest(
                executor_id=0,
                app_id=app_id,
                driver_url=driver_url,
                pod_name_prefix="probe",
                resource_profile=builder.conf.executor.default_profile,
            )
        )
        container = next(
            c for c in probe.pod["spec"]["containers"] if c["name"] == builder.conf.executor.container_name
        )
        requests: Mapping[str, str] = (container.get("resources") or {}).get("requests") or {}
        return build_pod_group(
            self.volcano,
            app_id=app_id,
            namespace=builder.conf.namespace,
            min_resources=multiply_quantities(requests, self.volcano.min_member),
            driver_pod=driver_pod,
        )


def plan_gang(conf: KubernetesConf) -> GangSetup:
    """YuniKorn annotations, a Volcano PodGroup and/or the built-in gate, per the configuration."""
    gang = conf.gang
    min_member = gang.min_executors or max(1, conf.scaling.initial_target)
    scheduler = conf.executor.scheduler_name or ""
    steps: list[FeatureStep] = []
    volcano = None
    use_yunikorn = gang.yunikorn if gang.yunikorn is not None else scheduler == YUNIKORN
    if use_yunikorn:
        steps.append(
            YuniKornStep(
                YuniKornSettings(
                    min_member=min_member,
                    queue=gang.yunikorn_queue or "",
                    task_group=gang.yunikorn_task_group,
                    placeholder_timeout=gang.timeout,
                    style=gang.style,
                )
            )
        )
    if scheduler == VOLCANO:
        if gang.volcano_template_file:
            load_template(gang.volcano_template_file)  # fail before anything is created
        volcano = VolcanoSettings(
            min_member=min_member,
            queue=gang.volcano_queue or "",
            priority_class_name=gang.volcano_priority_class or "",
            template_file=gang.volcano_template_file,
        )
        steps.append(VolcanoStep())
    gate = GangGate(min_member, gang.timeout, hard=gang.style == "Hard") if gang.enabled else None
    return GangSetup(tuple(steps), volcano, gate)
