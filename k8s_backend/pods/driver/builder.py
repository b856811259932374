"""The driver pod builder (Spark's KubernetesDriverBuilder): the template (if any), then the driver steps
in Spark's order, then user steps.

``spark.kubernetes.driver.pod.featureSteps`` names Python classes (``package.module.ClassName`` or
``package.module:ClassName``) with ``configure_pod(pod, ctx)`` and ``additional_resources(ctx)``; the
JVM class names Spark takes there are refused, since no JVM builds this pod. Steps given in code run
after them. ``spark.kubernetes.driver.pod.excludedFeatureSteps`` leaves out a step by its class path
(or Spark's class name of the same step).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence

import attrs

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.driver.basic import DriverBasics, DriverBasicStep
from k8s_backend.pods.driver.credentials import DriverCredentialsStep, DriverSecret
from k8s_backend.pods.driver.hadoop import DriverHadoopConfStep
from k8s_backend.pods.driver.kerberos import DriverKerberosStep
from k8s_backend.pods.driver.network_policy import DriverNetworkPolicyStep
from k8s_backend.pods.driver.service import DriverServiceStep
from k8s_backend.pods.driver.step import DriverContext, DriverFeatureStep
from k8s_backend.pods.driver.steps import (
    DriverEnvSecretsStep,
    DriverLocalDirsStep,
    DriverMountSecretsStep,
    DriverVolumesStep,
)
from k8s_backend.pods.driver.template import load_driver_template, with_spark_container
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.user_steps import resolve_step_class

log = logging.getLogger(__name__)

FEATURE_STEPS_KEY = "spark.kubernetes.driver.pod.featureSteps"
EXCLUDED_STEPS_KEY = "spark.kubernetes.driver.pod.excludedFeatureSteps"
_SPARK_FEATURES = "org.apache.spark.deploy.k8s.features."
_SPARK_NAMES: dict[str, type] = {
    f"{_SPARK_FEATURES}MountSecretsFeatureStep": DriverMountSecretsStep,
    f"{_SPARK_FEATURES}EnvSecretsFeatureStep": DriverEnvSecretsStep,
    f"{_SPARK_FEATURES}MountVolumesFeatureStep": DriverVolumesStep,
    f"{_SPARK_FEATURES}HadoopConfDriverFeatureStep": DriverHadoopConfStep,
    f"{_SPARK_FEATURES}LocalDirsFeatureStep": DriverLocalDirsStep,
    # Kerberos and the executors' NetworkPolicy (pods/driver/kerberos.py, network_policy.py).
    f"{_SPARK_FEATURES}KerberosConfDriverFeatureStep": DriverKerberosStep,
    f"{_SPARK_FEATURES}NetworkPolicyFeatureStep": DriverNetworkPolicyStep,
}
_JVM_ROOTS = ("org.", "com.", "io.", "net.")


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def driver_steps(properties: Mapping[str, str]) -> list[DriverFeatureStep]:
    """The built-in driver steps after the basic and credentials ones, in Spark's order (the driver
    Service is :mod:`~k8s_backend.pods.driver.service`'s, created once the pod exists)."""
    return [
        DriverMountSecretsStep(properties),
        DriverEnvSecretsStep(properties),
        DriverVolumesStep(properties),
        DriverHadoopConfStep(properties),
        DriverKerberosStep(properties),
        DriverLocalDirsStep(properties),
        DriverNetworkPolicyStep(properties),
    ]


def _entries(properties: Mapping[str, str], key: str) -> list[str]:
    return [e.strip() for e in properties.get(key, "").split(",") if e.strip()]


def load_driver_user_step(entry: str, properties: Mapping[str, str]) -> DriverFeatureStep:
    """Import and construct one configured driver step (with the properties when it takes an argument)."""
    try:
        cls = resolve_step_class(entry)
    except ConfigError as error:
        why = (
            "JVM class names are refused: in cluster mode k8s_backend builds the driver pod in Python, so "
            "write the step as a Python class (see k8s_backend.pods.driver.DriverFeatureStep)"
            if entry.startswith(_JVM_ROOTS)
            else str(error.__cause__ or error)
        )
        raise ConfigError(
            f"{FEATURE_STEPS_KEY} entry {entry!r}: {why}", key=FEATURE_STEPS_KEY, value=entry
        ) from None
    try:
        takes_one = len(inspect.signature(cls).parameters) >= 1
    except (TypeError, ValueError):
        takes_one = False
    try:
        step = cls(properties) if takes_one else cls()
    except Exception as exc:
        raise ConfigError(
            f"{FEATURE_STEPS_KEY} entry {entry!r}: constructing {cls.__qualname__} failed ({exc!r})",
            key=FEATURE_STEPS_KEY,
            value=entry,
        ) from exc
    _check_step(step, f"{FEATURE_STEPS_KEY} entry {entry!r}")
    checked: DriverFeatureStep = step
    return checked


def _check_step(step: object, where: str) -> None:
    if not (
        callable(getattr(step, "configure_pod", None))
        and callable(getattr(step, "additional_resources", None))
    ):
        raise ConfigError(
            f"{where} ({type(step).__qualname__}) is not a driver feature step: it needs "
            "configure_pod(pod, ctx) and additional_resources(ctx) methods",
            key=FEATURE_STEPS_KEY,
            value=type(step).__qualname__,
        )


class DriverPodBuilder:
    """Runs the driver steps on a driver pod; every configuration problem is a :class:`ConfigError`
    raised when the builder is made, before anything is created.

    With ``basics`` (what the pod's basic settings need beyond the properties) the builder starts from
    the template and runs the basic step, the credentials step (the Secret's ``secret``) and the Service
    step first, as Spark does; none can be excluded, a driver pod without them would not run.
    """

    def __init__(
        self,
        properties: Mapping[str, str],
        steps: Sequence[DriverFeatureStep] = (),
        *,
        basics: DriverBasics | None = None,
        secret: DriverSecret | None = None,
    ) -> None:
        self._properties = properties
        self._base: list[DriverFeatureStep] = (
            []
            if basics is None
            else [
                DriverBasicStep(properties, basics),
                DriverCredentialsStep(secret or DriverSecret()),
                DriverServiceStep(properties, basics.names),
            ]
        )
        for index, step in enumerate(steps):
            _check_step(step, f"steps[{index}]")
        excluded = {
            _path(_SPARK_NAMES[e]) if e in _SPARK_NAMES else e.replace(":", ".")
            for e in _entries(properties, EXCLUDED_STEPS_KEY)
        }
        configured = [
            e for e in _entries(properties, FEATURE_STEPS_KEY) if e.replace(":", ".") not in excluded
        ]
        candidates = [
            *driver_steps(properties),
            *(load_driver_user_step(e, properties) for e in configured),
            *steps,
        ]
        self._steps = [*self._base, *(s for s in candidates if _path(type(s)) not in excluded)]
        present = {_path(type(s)) for s in candidates} | {
            e.replace(":", ".") for e in _entries(properties, FEATURE_STEPS_KEY)
        }
        for entry in sorted(excluded - present):
            log.warning(
                "%s lists %s, but no driver feature step has that class: nothing is excluded for it",
                EXCLUDED_STEPS_KEY,
                entry,
            )

    @property
    def steps(self) -> tuple[DriverFeatureStep, ...]:
        return tuple(self._steps)

    def build(self, pod: SparkPod, ctx: DriverContext) -> tuple[SparkPod, list[Obj]]:
        """The pod after every step, and the claims to create once it exists (owned by it)."""
        pod, claims, _ = self._run(pod, ctx)
        return pod, claims

    def build_pod(self, ctx: DriverContext) -> BuiltDriver:
        """The whole driver pod, from the template (if any) through every step, with the objects to
        create once it exists (owned by it, in its namespace)."""
        if not self._base:
            raise TypeError(
                "DriverPodBuilder.build_pod needs basics=: without the basic step there is no pod"
            )
        template, index = load_driver_template(self._properties)
        built, claims, services = self._run(template, ctx)
        for claim in claims:
            claim["metadata"]["namespace"] = ctx.namespace
        return BuiltDriver(with_spark_container(built, index), tuple(claims), services[0])

    def _run(self, pod: SparkPod, ctx: DriverContext) -> tuple[SparkPod, list[Obj], list[Obj]]:
        """Every step in order: the pod, its claims, and the Service (only the Service step makes one)."""
        resources: list[Obj] = []
        services: list[Obj] = []
        for step in self._steps:
            pod = step.configure_pod(pod, ctx)
            made = step.additional_resources(ctx)
            (services if isinstance(step, DriverServiceStep) else resources).extend(made)
        claims = [r for r in resources if r.get("kind") == "PersistentVolumeClaim"]
        for other in {str(r.get("kind")) for r in resources} - {"PersistentVolumeClaim"}:
            log.warning("Ignoring additional driver resources of kind %s: only PVCs are created", other)
        return pod, claims, services


@attrs.frozen
class BuiltDriver:
    """The driver pod, and what is created once it exists, owned by it: the on-demand claims of its
    volumes and its Service."""

    pod: Obj
    claims: tuple[Obj, ...]
    service: Obj
