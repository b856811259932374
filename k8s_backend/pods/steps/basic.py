"""The basic executor step: name, labels, image, resources, env, ports, args, owner, conf volume,
security context and termination grace period.

Spark's BasicExecutorFeatureStep; everything it sets is listed in the reference's section 3.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods import constants as c
from k8s_backend.pods.auth_secret import auth_secret_env, executors_need_auth_secret
from k8s_backend.pods.config_map import conf_volume_items, load_conf_dir_files
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.java_opts import split_command_string, startup_java_opts
from k8s_backend.pods.names import app_name_label, executor_hostname, substitute_ids
from k8s_backend.pods.objects import (
    add_volume_mounts,
    add_volumes,
    env_var,
    field_ref_env_var,
    items,
    owner_reference,
    section,
    upsert_env,
    volume_mount,
)
from k8s_backend.pods.resources import ExecutorResources, apply_resources, executor_resources
from k8s_backend.pods.step import SparkPod, StepContext

IMAGE_MISSING = (
    "Must specify the executor container image "
    "(spark.kubernetes.executor.container.image or spark.kubernetes.container.image)"
)
CUSTOM_LOG_URL_KEY = "spark.ui.custom.executor.log.url"
_PRESET_LABELS = (
    c.SPARK_VERSION_LABEL,
    c.SPARK_EXECUTOR_ID_LABEL,
    c.SPARK_APP_ID_LABEL,
    c.SPARK_APP_NAME_LABEL,
    c.SPARK_ROLE_LABEL,
    c.SPARK_RESOURCE_PROFILE_ID_LABEL,
)


def label_value(value: str) -> str:
    """Make a string usable as a label value (e.g. a local version like ``4.3.0+abc``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "-", value)[: c.DNS_LABEL_MAX_LENGTH]
    return cleaned.strip("-_.")


def resolve_auth_secret(conf: KubernetesConf, facts: DriverFacts) -> str | None:
    """The secret to hand executors in ``_SPARK_AUTH_SECRET``, or None when none is needed.

    Needed when ``spark.authenticate`` is on and executors have no secret file to read it from.
    """
    if not executors_need_auth_secret(conf):
        return None
    secret = facts.auth_secret or conf.get("spark.authenticate.secret")
    if not secret:
        raise ConfigError(
            "spark.authenticate=true but executors would get no secret: set spark.authenticate.secret, "
            "or spark.authenticate.secret.file (with the file present in executor images), or pass the "
            "driver's secret to the pod builder (DriverFacts.auth_secret)",
            key="spark.authenticate.secret",
            value=None,
        )
    return secret


class BasicExecutorStep:
    """Spark's BasicExecutorFeatureStep. Checks the configuration once, when constructed."""

    def __init__(self, conf: KubernetesConf, facts: DriverFacts) -> None:
        pod_conf = conf.executor
        if not pod_conf.image:
            raise ConfigError(IMAGE_MISSING, key="spark.kubernetes.executor.container.image", value=None)
        port = pod_conf.block_manager_port
        if port != 0 and not 1024 <= port <= 65535:
            raise ConfigError(
                f"spark.blockManager.port={port} is invalid: the port number must be 0 (any free port) "
                "or in [1024, 65535]",
                key="spark.blockManager.port",
                value=port,
            )
        for key in pod_conf.labels:
            if key in _PRESET_LABELS:
                raise ConfigError(
                    f"Custom executor labels cannot contain {key} as it is reserved for Spark: remove "
                    f"spark.kubernetes.executor.label.{key}",
                    key=f"spark.kubernetes.executor.label.{key}",
                    value=pod_conf.labels[key],
                )
        executor_resources(pod_conf.default_profile, pod_conf)  # a missing GPU vendor fails early
        split_command_string(pod_conf.extra_java_options)  # an unterminated quote fails early
        self._conf = conf
        self._image = pod_conf.image
        self._facts = facts
        self._auth_secret = resolve_auth_secret(conf, facts)
        self._startup_opts = startup_java_opts(conf.spark_properties)
        self._conf_items = conf_volume_items(
            load_conf_dir_files(facts.conf_dir, pod_conf.config_map_max_size)
        )
        self._static_labels = {
            c.SPARK_VERSION_LABEL: label_value(facts.spark_version),
            c.SPARK_APP_NAME_LABEL: app_name_label(conf.app_name),
            c.SPARK_ROLE_LABEL: c.EXECUTOR_ROLE,
        }

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        pod = pod.copy()
        resources = executor_resources(ctx.resource_profile, self._conf.executor)
        self._configure_container(pod.container, ctx, resources)
        self._configure_pod(pod.pod, ctx)
        if ctx.request.config_map_name is not None:
            add_volume_mounts(
                pod.container, [volume_mount(c.SPARK_CONF_VOLUME_EXEC, c.SPARK_CONF_DIR_INTERNAL)]
            )
            config_map: Obj = {"name": ctx.request.config_map_name}
            if self._conf_items:
                config_map["items"] = [dict(item) for item in self._conf_items]
            add_volumes(pod.pod, [{"name": c.SPARK_CONF_VOLUME_EXEC, "configMap": config_map}])
        return pod

    def _configure_container(self, container: Obj, ctx: StepContext, resources: ExecutorResources) -> None:
        pod_conf = self._conf.executor
        container["name"] = container.get("name") or c.EXECUTOR_CONTAINER_NAME
        container["image"] = self._image
        container["imagePullPolicy"] = pod_conf.pull_policy
        # Non-default profiles size the executor themselves; template resources would contradict them.
        apply_resources(container, resources, clear_existing=not ctx.is_default_profile)
        upsert_env(container, self.environment(ctx, resources))
        port = pod_conf.block_manager_port
        if port != 0:  # 0 means "any free port": there is nothing to declare
            ports = items(container, "ports")
            ports[:] = [
                p
                for p in ports
                if not (p.get("name") == c.BLOCK_MANAGER_PORT_NAME or p.get("containerPort") == port)
            ]
            ports.append({"name": c.BLOCK_MANAGER_PORT_NAME, "containerPort": port})
        args = items(container, "args")
        if not args or args[-1] != c.EXECUTOR_ARG:
            args.append(c.EXECUTOR_ARG)
        # Spark 4.3 always sets this (a template's value is overridden, its other securityContext
        # fields are kept): the conf default, false, hardens executors unless explicitly allowed.
        security = section(container, "securityContext")
        security["allowPrivilegeEscalation"] = pod_conf.allow_privilege_escalation
        if pod_conf.decommission_enabled:
            lifecycle = section(container, "lifecycle")
            lifecycle["preStop"] = {"exec": {"command": [pod_conf.decommission_script]}}

    def _configure_pod(self, pod: Obj, ctx: StepContext) -> None:
        pod_conf = self._conf.executor
        pod["apiVersion"] = "v1"
        pod["kind"] = "Pod"
        metadata = section(pod, "metadata")
        metadata["name"] = ctx.pod_name
        section(metadata, "labels").update(self.labels(ctx))
        if pod_conf.annotations:
            section(metadata, "annotations").update(
                {
                    k: substitute_ids(str(v), ctx.app_id, ctx.executor_id)
                    for k, v in pod_conf.annotations.items()
                }
            )
        driver_pod = ctx.request.driver_pod
        if driver_pod is not None:
            reference = owner_reference(driver_pod)
            refs = items(metadata, "ownerReferences")
            refs[:] = [r for r in refs if r.get("uid") != reference["uid"]]
            refs.append(reference)
        spec = section(pod, "spec")
        spec["hostname"] = executor_hostname(ctx.pod_name)
        spec["restartPolicy"] = "Always" if self._conf.allocation.allocator == "statefulset" else "Never"
        # As in Spark 4.3, always set, overriding a template's value (whole seconds, like Spark's long).
        spec["terminationGracePeriodSeconds"] = int(pod_conf.termination_grace_period)
        if pod_conf.node_selector:
            section(spec, "nodeSelector").update({k: str(v) for k, v in pod_conf.node_selector.items()})
        if pod_conf.pull_secrets:
            secrets = items(spec, "imagePullSecrets")
            known = {s.get("name") for s in secrets}
            secrets.extend({"name": name} for name in pod_conf.pull_secrets if name not in known)
        if pod_conf.scheduler_name:
            spec["schedulerName"] = pod_conf.scheduler_name

    def labels(self, ctx: StepContext) -> dict[str, str]:
        """User labels (ids substituted), then Spark's preset labels."""
        labels = {
            k: substitute_ids(str(v), ctx.app_id, ctx.executor_id)
            for k, v in self._conf.executor.labels.items()
        }
        labels.update(self._static_labels)
        labels[c.SPARK_EXECUTOR_ID_LABEL] = str(ctx.executor_id)
        labels[c.SPARK_APP_ID_LABEL] = ctx.app_id
        labels[c.SPARK_RESOURCE_PROFILE_ID_LABEL] = str(ctx.resource_profile.id)
        return labels

    def java_options(self, ctx: StepContext) -> list[str]:
        """The user's extraJavaOptions (ids substituted, split like a shell), then startup confs."""
        user = substitute_ids(self._conf.executor.extra_java_options, ctx.app_id, ctx.executor_id)
        return split_command_string(user) + self._startup_opts

    def environment(self, ctx: StepContext, resources: ExecutorResources) -> list[Obj]:
        """The executor env vars, in Spark's order."""
        executor_id = str(ctx.executor_id)
        pairs: list[tuple[str, str]] = [
            (c.ENV_SPARK_USER, self._facts.spark_user),
            (c.ENV_DRIVER_URL, ctx.request.driver_url),
            (c.ENV_EXECUTOR_CORES, str(resources.cores)),
            (c.ENV_EXECUTOR_MEMORY, f"{resources.heap_mib}m"),
            (c.ENV_APPLICATION_ID, ctx.app_id),
            (c.ENV_SPARK_CONF_DIR, c.SPARK_CONF_DIR_INTERNAL),
            (c.ENV_EXECUTOR_ID, executor_id),
            (c.ENV_RESOURCE_PROFILE_ID, str(ctx.resource_profile.id)),
        ]
        if self._conf.get(CUSTOM_LOG_URL_KEY):
            pairs += [
                (c.ENV_EXECUTOR_ATTRIBUTE_APP_ID, ctx.app_id),
                (c.ENV_EXECUTOR_ATTRIBUTE_EXECUTOR_ID, executor_id),
            ]
        for name, value in self._conf.executor.environment.items():
            value = str(value)
            if name == c.ENV_EXECUTOR_DIRS:
                value = value.replace(c.ENV_APPLICATION_ID, ctx.app_id).replace(
                    c.ENV_EXECUTOR_ID, executor_id
                )
            pairs.append((name, value))
        env = [env_var(name, value) for name, value in pairs]
        if self._auth_secret is not None:
            secret_name = ctx.request.auth_secret_name
            env.append(
                env_var(c.ENV_AUTH_SECRET, self._auth_secret)
                if secret_name is None  # a builder used on its own: Spark's way
                else auth_secret_env(c.ENV_AUTH_SECRET, secret_name)
            )
        pairs = []
        if self._conf.executor.extra_class_path:
            pairs.append((c.ENV_CLASSPATH, self._conf.executor.extra_class_path))
        pairs += [(f"{c.ENV_JAVA_OPT_PREFIX}{i}", opt) for i, opt in enumerate(self.java_options(ctx))]
        env += [env_var(name, value) for name, value in pairs]
        env.append(field_ref_env_var(c.ENV_EXECUTOR_POD_IP, "status.podIP"))
        env.append(field_ref_env_var(c.ENV_EXECUTOR_POD_NAME, "metadata.name"))
        return env
