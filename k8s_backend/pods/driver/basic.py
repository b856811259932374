"""Spark's BasicDriverFeatureStep: the driver pod's name, labels, annotations, restart policy, service
account, node selector, pull secrets and scheduler; its container's image, arguments, ports, resources
(memory with its overhead, :mod:`~k8s_backend.pods.driver.sizing`), environment, and ``/opt/spark/conf``
and the application files from the driver's ConfigMap. Applied on top of the template, as Spark does."""

from __future__ import annotations

import getpass
from collections.abc import Mapping, Sequence
from importlib import metadata

import attrs

from k8s_backend.conf import syntax
from k8s_backend.conf.units import parse_bool
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    SPARK_APP_ID_LABEL,
    SPARK_APP_NAME_LABEL,
    SPARK_CONF_DIR_INTERNAL,
    SPARK_ROLE_LABEL,
    SPARK_VERSION_LABEL,
)
from k8s_backend.pods.driver.names import DriverNames, app_labels, with_prefix
from k8s_backend.pods.driver.sizing import driver_ports, driver_resources
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.names import app_name_label
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, section, upsert_named
from k8s_backend.pods.step import SparkPod

DRIVER_CONTAINER_NAME = "spark-kubernetes-driver"
CONF_VOLUME = "spark-conf-volume-driver"
FILES_VOLUME = "k8s-backend-app-files"
APP_FILES_DIR = "/opt/k8s-backend/files"
DRIVER_PORT_NAME = "driver-rpc-port"
BLOCK_MANAGER_PORT_NAME = "blockmanager"
UI_PORT_NAME = "spark-ui"
RESERVED_DRIVER_LABELS = (SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL, SPARK_APP_NAME_LABEL, SPARK_VERSION_LABEL)


@attrs.frozen
class DriverBasics:
    """What the basic step needs besides the properties: the objects' names, the application's name,
    the image, the container's arguments, and the ConfigMap's volume items (``/opt/spark/conf``'s, and
    the shipped application files', none when nothing is shipped)."""

    names: DriverNames
    app_name: str
    image: str
    args: tuple[str, ...]
    conf_items: tuple[Obj, ...]
    file_items: tuple[Obj, ...] = ()


def driver_labels(properties: Mapping[str, str], app_id: str, app_name: str) -> dict[str, str]:
    """Spark's driver labels plus ``spark.kubernetes.driver.label.*`` (Spark's own keys refused)."""
    labels: dict[str, str] = {}
    for name, value in with_prefix(properties, "spark.kubernetes.driver.label.").items():
        key = "spark.kubernetes.driver.label." + name
        if name in RESERVED_DRIVER_LABELS:
            raise ConfigError(
                f"{key}={value}: {name} is reserved for Spark; remove {key}", key=key, value=value
            )
        problem = syntax.label_key_problem(name) or syntax.label_value_problem(value)
        if problem is not None:
            raise ConfigError(f"{key}={value} is invalid: the label {problem}", key=key, value=value)
        labels[name] = value
    labels.update(app_labels(app_id))
    labels[SPARK_APP_NAME_LABEL] = app_name_label(app_name) or "spark"
    labels[SPARK_VERSION_LABEL] = _spark_version()
    return labels


def _spark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "unknown"


class DriverBasicStep:
    """The driver's basic settings over the template's (checked when the step is made)."""

    def __init__(self, properties: Mapping[str, str], basics: DriverBasics) -> None:
        self._properties = properties
        self._basics = basics
        self._labels = driver_labels(properties, basics.names.app_id, basics.app_name)
        self._env = _env(properties, basics.names.app_id)
        self._allow_escalation = _allow_privilege_escalation(properties)
        self._resources = driver_resources(properties)
        self._ports = driver_ports(properties)

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        pod = pod.copy()
        self._pod_settings(pod.pod)
        self._container_settings(pod.container)
        upsert_named(pod.container, "env", self._env)
        self._conf_volumes(pod)
        pod.pod["apiVersion"] = "v1"
        pod.pod["kind"] = "Pod"
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()

    def _pod_settings(self, pod: Obj) -> None:
        """Metadata, restart policy, service account, node selector, pull secrets and scheduler."""
        properties, names = self._properties, self._basics.names
        meta = section(pod, "metadata")
        meta["name"] = names.pod
        meta["namespace"] = names.namespace
        meta["labels"] = {**(meta.get("labels") or {}), **self._labels}
        annotations = with_prefix(properties, "spark.kubernetes.driver.annotation.")
        if annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        spec = section(pod, "spec")
        spec["restartPolicy"] = "Never"
        account = properties.get("spark.kubernetes.authenticate.driver.serviceAccountName")
        if account:
            spec["serviceAccountName"] = account
        selector = {
            **with_prefix(properties, "spark.kubernetes.node.selector."),
            **with_prefix(properties, "spark.kubernetes.driver.node.selector."),
        }
        if selector:
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **selector}
        secrets = [
            s.strip()
            for s in properties.get("spark.kubernetes.container.image.pullSecrets", "").split(",")
            if s.strip()
        ]
        if secrets:
            upsert_named(spec, "imagePullSecrets", [{"name": s} for s in secrets])
        scheduler = properties.get("spark.kubernetes.driver.scheduler.name") or properties.get(
            "spark.kubernetes.scheduler.name"
        )
        if scheduler:
            spec["schedulerName"] = scheduler

    def _container_settings(self, container: Obj) -> None:
        """Name, image, arguments, security context, ports and resources of the Spark container."""
        resources, ports = self._resources, self._ports
        container["name"] = container.get("name") or DRIVER_CONTAINER_NAME
        container["image"] = self._basics.image
        container["imagePullPolicy"] = self._properties.get(
            "spark.kubernetes.container.image.pullPolicy", "IfNotPresent"
        )
        container.pop("command", None)  # the image's entrypoint passes our arguments through
        container["args"] = list(self._basics.args)
        # A failed driver's last log lines become its termination message, which `status` shows.
        container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
        # As Spark 4.3 does for its containers: always set, over a template's value (the rest of a
        # template's securityContext is kept).
        section(container, "securityContext")["allowPrivilegeEscalation"] = self._allow_escalation
        upsert_named(
            container,
            "ports",
            [
                {"name": DRIVER_PORT_NAME, "containerPort": ports.driver, "protocol": "TCP"},
                {"name": BLOCK_MANAGER_PORT_NAME, "containerPort": ports.block_manager, "protocol": "TCP"},
                {"name": UI_PORT_NAME, "containerPort": ports.ui, "protocol": "TCP"},
            ],
        )
        current: Obj = section(container, "resources")
        requests = {
            **(current.get("requests") or {}),
            "memory": resources.memory,
            "cpu": resources.cpu_request,
        }
        limits = {**(current.get("limits") or {}), "memory": resources.memory}
        if resources.cpu_limit:
            limits["cpu"] = resources.cpu_limit
        container["resources"] = {**current, "requests": requests, "limits": limits}

    def _conf_volumes(self, pod: SparkPod) -> None:
        """``/opt/spark/conf`` and the shipped application files, from the driver's ConfigMap."""
        config_map = self._basics.names.config_map
        mounts: list[Obj] = [{"name": CONF_VOLUME, "mountPath": SPARK_CONF_DIR_INTERNAL}]
        volumes: list[Obj] = [
            {"name": CONF_VOLUME, "configMap": {"name": config_map, "items": list(self._basics.conf_items)}}
        ]
        if self._basics.file_items:
            mounts.append({"name": FILES_VOLUME, "mountPath": APP_FILES_DIR, "readOnly": True})
            volumes.append(
                {
                    "name": FILES_VOLUME,
                    "configMap": {"name": config_map, "items": list(self._basics.file_items)},
                }
            )
        add_volume_mounts(pod.container, mounts)
        add_volumes(pod.pod, volumes)


def _env(properties: Mapping[str, str], app_id: str) -> list[Obj]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "spark"
    env: list[Obj] = [
        {"name": "SPARK_USER", "value": properties.get("spark.kubernetes.driverEnv.SPARK_USER", user)},
        {"name": "SPARK_APPLICATION_ID", "value": app_id},
        {"name": "SPARK_CONF_DIR", "value": SPARK_CONF_DIR_INTERNAL},
        {
            "name": "SPARK_DRIVER_BIND_ADDRESS",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
        },
    ]
    for key, var in (
        ("spark.pyspark.python", "PYSPARK_PYTHON"),
        ("spark.pyspark.driver.python", "PYSPARK_DRIVER_PYTHON"),
    ):
        if properties.get(key):
            env.append({"name": var, "value": properties[key]})
    for name, value in with_prefix(properties, "spark.kubernetes.driverEnv.").items():
        if not syntax.is_env_name(name):
            key = f"spark.kubernetes.driverEnv.{name}"
            raise ConfigError(
                f"{key} is invalid: {name!r} is not an environment variable name", key=key, value=value
            )
        env.append({"name": name, "value": value})
    return env


def _allow_privilege_escalation(properties: Mapping[str, str]) -> bool:
    """``spark.kubernetes.driver.securityContext.allowPrivilegeEscalation``, else the shared key, else
    false (Spark 4.3's default)."""
    for key in (
        "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation",
        "spark.kubernetes.securityContext.allowPrivilegeEscalation",
    ):
        if key in properties:
            return parse_bool(properties[key], key=key)
    return False
