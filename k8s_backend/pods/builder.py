"""The executor pod builder (Spark's KubernetesExecutorBuilder).

Starts from the pod template (or an empty pod) and runs the feature steps in Spark's order: basic,
credentials, mounted secrets, env secrets, volumes, Hadoop conf, local dirs, then user steps (those of
``spark.kubernetes.executor.pod.featureSteps``, then those passed in code). As in Spark, a step whose
class is listed in ``spark.kubernetes.executor.pod.excludedFeatureSteps`` is left out, built-in or
not. The configuration, the template and the user steps are loaded and checked once, when the builder
is made.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.names import check_executor_names, executor_hostname, executor_pod_name
from k8s_backend.pods.objects import items, section
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.pods.step import FeatureStep, SparkPod, StepContext
from k8s_backend.pods.steps import (
    BasicExecutorStep,
    EnvSecretsStep,
    ExecutorCredentialsStep,
    HadoopConfStep,
    LocalDirsStep,
    MountSecretsStep,
    MountVolumesStep,
)
from k8s_backend.pods.template import PodTemplate, load_pod_template
from k8s_backend.pods.user_steps import is_feature_step, load_user_steps

log = logging.getLogger(__name__)

__all__ = ["ExecutorPodBuilder", "ExecutorPodRequest", "ExecutorPodSpec"]

EXCLUDED_STEPS_KEY = "spark.kubernetes.executor.pod.excludedFeatureSteps"
_SPARK_FEATURES = "org.apache.spark.deploy.k8s.features."
# Spark's names of the built-in steps, so a configuration written for Spark excludes the same steps.
_SPARK_STEP_NAMES = {
    f"{_SPARK_FEATURES}BasicExecutorFeatureStep": BasicExecutorStep,
    f"{_SPARK_FEATURES}ExecutorKubernetesCredentialsFeatureStep": ExecutorCredentialsStep,
    f"{_SPARK_FEATURES}MountSecretsFeatureStep": MountSecretsStep,
    f"{_SPARK_FEATURES}EnvSecretsFeatureStep": EnvSecretsStep,
    f"{_SPARK_FEATURES}MountVolumesFeatureStep": MountVolumesStep,
    f"{_SPARK_FEATURES}HadoopConfExecutorFeatureStep": HadoopConfStep,
    f"{_SPARK_FEATURES}LocalDirsFeatureStep": LocalDirsStep,
}


def class_path(cls: type) -> str:
    """A class's dotted path, ``package.module.ClassName``, as excludedFeatureSteps names it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _normalize(entry: str) -> str:
    """An entry as a dotted class path: Spark's built-in step names become ours, and the featureSteps
    colon form ``package.module:ClassName`` becomes ``package.module.ClassName``."""
    entry = entry.strip()
    entry = class_path(_SPARK_STEP_NAMES[entry]) if entry in _SPARK_STEP_NAMES else entry
    return entry.replace(":", ".")


def names_builtin_step(entry: str) -> bool:
    """Whether an ``excludedFeatureSteps`` entry names a built-in step (by Spark's class name or ours)."""
    return _normalize(entry) in {class_path(cls) for cls in _SPARK_STEP_NAMES.values()}


def _without_excluded(steps: list[FeatureStep], excluded: set[str], matched: set[str]) -> list[FeatureStep]:
    kept = []
    for step in steps:
        path = class_path(type(step))
        if path in excluded:
            matched.add(path)
            log.info("Executor feature step %s is excluded by %s", path, EXCLUDED_STEPS_KEY)
        else:
            kept.append(step)
    return kept


def builtin_steps(conf: KubernetesConf, facts: DriverFacts) -> list[FeatureStep]:
    """Spark's executor steps, in Spark's order."""
    return [
        BasicExecutorStep(conf, facts),
        ExecutorCredentialsStep(conf),
        MountSecretsStep(conf),
        EnvSecretsStep(conf),
        MountVolumesStep(conf),
        HadoopConfStep(conf),
        LocalDirsStep(conf),
    ]


class ExecutorPodBuilder:
    """Builds executor pods (and their on-demand claims) from the configuration.

    ``steps`` are extra user steps run after the configured ones. ``facts`` describe the driver
    process (user, pyspark version, conf dir, auth secret); detected from this process when omitted.
    Raises :class:`ConfigError` for any configuration problem.
    """

    def __init__(
        self,
        conf: KubernetesConf,
        steps: Sequence[FeatureStep] | None = None,
        *,
        facts: DriverFacts | None = None,
    ) -> None:
        self._conf = conf
        self._facts = facts if facts is not None else DriverFacts.detect(conf)
        self._template: PodTemplate = load_pod_template(
            conf.executor.pod_template_file, conf.executor.pod_template_container_name, conf.namespace
        )
        extra = list(steps or ())
        for index, step in enumerate(extra):
            if not is_feature_step(step):
                raise ConfigError(
                    f"steps[{index}] ({type(step).__qualname__}) is not a feature step: it needs "
                    "configure_pod(pod, ctx) and additional_resources(ctx) methods",
                    key="steps",
                    value=step,
                )
        excluded = {_normalize(e) for e in conf.executor.excluded_feature_steps if e.strip()}
        matched: set[str] = set()
        # A configured entry that is itself excluded is not even imported (it may not import here).
        configured = []
        for entry in conf.executor.feature_steps:
            if _normalize(entry) in excluded:
                matched.add(_normalize(entry))
                log.info("Executor feature step %s is excluded by %s", entry.strip(), EXCLUDED_STEPS_KEY)
            else:
                configured.append(entry)
        # Spark filters every step by its class name, built-in ones included.
        self._steps: list[FeatureStep] = _without_excluded(
            [*builtin_steps(conf, self._facts), *load_user_steps(configured, conf), *extra], excluded, matched
        )
        for entry in sorted(excluded - matched):
            log.warning(
                "%s lists %s, but no executor feature step has that class: nothing is excluded for it",
                EXCLUDED_STEPS_KEY,
                entry,
            )
        self._warned_kinds: set[str] = set()

    @property
    def conf(self) -> KubernetesConf:
        return self._conf

    @property
    def facts(self) -> DriverFacts:
        """The driver facts in use; pass ``facts.conf_dir`` to :func:`build_executor_config_map`."""
        return self._facts

    @property
    def steps(self) -> tuple[FeatureStep, ...]:
        return tuple(self._steps)

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec:
        """The pod for one executor, ready to create, and the claims to create with it."""
        # A StatefulSet/Deployment template's id is EXECID; its name only has to be valid (the
        # controller names the pods), hence lower case.
        pod_name = executor_pod_name(request.pod_name_prefix, str(request.executor_id).lower())
        check_executor_names(pod_name, executor_hostname(pod_name))
        ctx = StepContext(conf=self._conf, request=request, pod_name=pod_name)
        spark_pod = self._template.spark_pod()
        resources: list[Obj] = []
        for step in self._steps:
            spark_pod = step.configure_pod(spark_pod, ctx)
            resources.extend(step.additional_resources(ctx))
        return ExecutorPodSpec(pod=self._attach(spark_pod), pvcs=self._claims(resources))

    def _attach(self, spark_pod: SparkPod) -> Obj:
        """Put the Spark container back where the template had it (first without a template)."""
        pod = spark_pod.pod
        containers = items(section(pod, "spec"), "containers")
        containers.insert(min(self._template.container_index, len(containers)), spark_pod.container)
        return pod

    def _claims(self, resources: list[Obj]) -> tuple[Obj, ...]:
        # As in Spark, only PersistentVolumeClaims are created alongside executor pods.
        claims = []
        for resource in resources:
            kind = str(resource.get("kind"))
            if kind == "PersistentVolumeClaim":
                claims.append(resource)
            elif kind not in self._warned_kinds:
                self._warned_kinds.add(kind)
                log.warning("Ignoring additional executor resources of kind %s: only PVCs are created", kind)
        return tuple(claims)
