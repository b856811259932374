"""Cluster mode: check the executors' configuration at submission, as the driver will at its start.

The driver in the pod builds its executor pod builder (and so checks the executor image, ports, labels,
Java options, volumes...) only once the submission has created its pod, Service, Secret and ConfigMap.
Here the same builder (and the gang steps) are made from the same :class:`KubernetesConf`, and one
sample executor pod is built, so that bad executor input is a usage error and nothing is created.

What exists only inside the driver's image is left to the driver: an executor pod template or Volcano
PodGroup template that this machine cannot read, and user feature steps (Python classes of that image).
"""

from __future__ import annotations

import os
import urllib.parse

import attrs

from k8s_backend.assembly.application import check_identity
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.conf import syntax
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.gang.setup import plan_gang
from k8s_backend.pods.builder import ExecutorPodBuilder, names_builtin_step
from k8s_backend.pods.config_map import executor_config_map_name
from k8s_backend.pods.facts import DriverFacts, installed_spark_version
from k8s_backend.pods.names import resource_name_prefix
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec

SAMPLE_EXECUTOR_ID = 1
# The driver resolves the real RPC secret itself (from its JVM); only its presence matters here.
_SECRET_PLACEHOLDER = "checked-by-the-driver"


def check_executors(conf: KubernetesConf, *, app_id: str) -> ExecutorPodSpec:
    """Build one sample executor pod as the driver will; a :class:`UsageError` for any bad value."""
    driver_url = f"spark://CoarseGrainedScheduler@{conf.driver.host or 'driver'}:{conf.driver.port}"
    try:
        check_identity(app_id, driver_url)
        checked = as_checked_here(conf)
        gang = plan_gang(checked)
        facts = DriverFacts(
            spark_user="spark", spark_version=installed_spark_version(), auth_secret=_SECRET_PLACEHOLDER
        )
        builder = ExecutorPodBuilder(checked, steps=gang.steps, facts=facts)
        spec = builder.build(
            ExecutorPodRequest(
                executor_id=SAMPLE_EXECUTOR_ID,
                app_id=app_id,
                driver_url=driver_url,
                pod_name_prefix=conf.executor.pod_name_prefix or resource_name_prefix(conf.app_name),
                resource_profile=conf.executor.default_profile,
                config_map_name=None if conf.executor.disable_config_map else executor_config_map_name("0"),
            )
        )
        _check_built(spec)
    except ConfigError as error:
        raise UsageError(f"{error} (executor configuration, checked before anything is created)") from None
    return spec


def as_checked_here(conf: KubernetesConf) -> KubernetesConf:
    """``conf`` without what only the driver's image has: unreadable templates and user steps."""
    executor, gang = conf.executor, conf.gang
    return attrs.evolve(
        conf,
        executor=attrs.evolve(
            executor,
            pod_template_file=_if_readable(executor.pod_template_file),
            feature_steps=(),
            excluded_feature_steps=tuple(e for e in executor.excluded_feature_steps if names_builtin_step(e)),
        ),
        gang=attrs.evolve(gang, volcano_template_file=_if_readable(gang.volcano_template_file)),
    )


def _if_readable(path: str | None) -> str | None:
    """``path`` if this machine can read it (a plain path or ``file:``), else None: the driver checks it."""
    if not path:
        return path
    parsed = urllib.parse.urlparse(path)
    if parsed.scheme == "file":
        local = urllib.parse.unquote(parsed.path)
    elif parsed.scheme == "" or len(parsed.scheme) == 1:  # a plain path (or a Windows drive letter)
        local = path
    else:  # local:// (in the image), s3a://...: not on this machine
        return None
    return path if os.path.isfile(local) else None


def _check_built(spec: ExecutorPodSpec) -> None:
    """What only the whole object shows: the template's, Spark's and the user's annotations together."""
    for obj in (spec.pod, *spec.pvcs):
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        problem = syntax.annotations_size_problem({str(k): str(v) for k, v in annotations.items()})
        if problem is not None:
            raise ConfigError(
                f"{obj.get('kind', 'object')} {metadata.get('name')} would be refused: {problem}",
                key="spark.kubernetes.executor.annotation.*",
            )
