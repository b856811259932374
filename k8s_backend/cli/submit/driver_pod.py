"""Cluster mode's objects: the driver pod, its headless Service and its ConfigMap (pure builders).

The pod follows Spark's BasicDriverFeatureStep (labels, resources with memory overhead, ports, env,
``/opt/spark/conf`` from the ConfigMap), with an optional driver pod template as the starting point.
Its container runs ``k8s-backend submit --deploy-mode client`` on the shipped files, so the driver
inside the pod runs the application with k8s_backend's backend. The Service and ConfigMap are owned
by the pod, so deleting the pod removes everything the application created. How big the driver is
and which ports it listens on are :mod:`~k8s_backend.cli.submit.driver_sizing`'s rules.
"""

from __future__ import annotations

import copy
import getpass
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

import attrs

from k8s_backend.cli.common import driver_token
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.submit.driver_files import APP_FILES_DIR, DriverFiles, conf_items, file_items
from k8s_backend.cli.submit.driver_sizing import driver_ports, driver_resources
from k8s_backend.conf import syntax
from k8s_backend.conf.units import parse_bool
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    DRIVER_ROLE,
    SPARK_APP_ID_LABEL,
    SPARK_APP_NAME_LABEL,
    SPARK_CONF_DIR_INTERNAL,
    SPARK_CONF_FILE_NAME,
    SPARK_ROLE_LABEL,
    SPARK_VERSION_LABEL,
)
from k8s_backend.pods.driver import DriverContext, DriverFeatureStep, DriverPodBuilder
from k8s_backend.pods.driver.service import service_spec_settings
from k8s_backend.pods.names import app_name_label
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, owner_reference, section, upsert_named
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.template import read_template_file, select_spark_container

DRIVER_CONTAINER_NAME = "spark-kubernetes-driver"
CONF_VOLUME = "spark-conf-volume-driver"
FILES_VOLUME = "k8s-backend-app-files"
DRIVER_PORT_NAME = "driver-rpc-port"
BLOCK_MANAGER_PORT_NAME = "blockmanager"
UI_PORT_NAME = "spark-ui"
DRIVER_TEMPLATE_KEY = "spark.kubernetes.driver.podTemplateFile"
RESERVED_DRIVER_LABELS = (SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL, SPARK_APP_NAME_LABEL, SPARK_VERSION_LABEL)


@attrs.frozen
class DriverNames:
    """Names of the objects of one cluster-mode application."""

    app_id: str
    pod: str
    service: str
    config_map: str
    namespace: str

    @property
    def submission_id(self) -> str:
        return f"{self.namespace}:{self.pod}"

    @property
    def service_host(self) -> str:
        return f"{self.service}.{self.namespace}.svc"

    @property
    def token_secret(self) -> str:
        """The Secret holding the driver's API token, when it needs one."""
        return driver_token.secret_name(self.pod, self.config_map.removesuffix("-conf-map"))


def with_prefix(properties: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {
        k[len(prefix) :]: v for k, v in sorted(properties.items()) if k.startswith(prefix) and k != prefix
    }


def driver_labels(properties: Mapping[str, str], app_id: str, app_name: str) -> dict[str, str]:
    """Spark's driver labels plus ``spark.kubernetes.driver.label.*`` (Spark's own keys refused)."""
    labels: dict[str, str] = {}
    for name, value in with_prefix(properties, "spark.kubernetes.driver.label.").items():
        key = "spark.kubernetes.driver.label." + name
        if name in RESERVED_DRIVER_LABELS:
            raise UsageError(f"{key}={value}: {name} is reserved for Spark; remove {key}")
        problem = syntax.label_key_problem(name) or syntax.label_value_problem(value)
        if problem is not None:
            raise UsageError(f"{key}={value} is invalid: the label {problem}")
        labels[name] = value
    labels.update(app_labels(app_id))
    labels[SPARK_APP_NAME_LABEL] = app_name_label(app_name) or "spark"
    labels[SPARK_VERSION_LABEL] = _spark_version()
    return labels


def app_labels(app_id: str) -> dict[str, str]:
    """The labels that select the driver (and the Service's and ConfigMap's application)."""
    return {SPARK_APP_ID_LABEL: app_id, SPARK_ROLE_LABEL: DRIVER_ROLE}


def _spark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "unknown"


def _template(properties: Mapping[str, str]) -> tuple[Obj, Obj, int]:
    path = properties.get(DRIVER_TEMPLATE_KEY)
    if not path:
        return {}, {}, 0
    try:
        loaded = select_spark_container(
            read_template_file(path, key=DRIVER_TEMPLATE_KEY),
            properties.get("spark.kubernetes.driver.podTemplateContainerName"),
        )
    except ConfigError as error:
        raise UsageError(str(error)) from None
    return copy.deepcopy(loaded.pod), copy.deepcopy(loaded.container), loaded.container_index


def driver_args(
    command: Sequence[str],
    files: DriverFiles,
    app_args: Sequence[str],
    *,
    use_pod_ip: bool,
    token_file_key: str | None = None,
    file_keys: Mapping[str, str] | None = None,
) -> list[str]:
    """The container's arguments: ``k8s-backend submit --deploy-mode client`` on the shipped files.

    ``$(SPARK_DRIVER_BIND_ADDRESS)`` is expanded by the kubelet to the pod's IP, and
    ``$(K8S_BACKEND_API_TOKEN_FILE)`` (with ``token_file_key``) to the mounted token file's path, and
    each variable of ``file_keys`` (property key -> variable) to its mounted credential file's path.
    """
    args = [*command, "submit", "--deploy-mode", "client"]
    args += ["--properties-file", f"{SPARK_CONF_DIR_INTERNAL}/{SPARK_CONF_FILE_NAME}"]
    args += ["--conf", "spark.driver.bindAddress=$(SPARK_DRIVER_BIND_ADDRESS)"]
    if token_file_key:
        args += ["--conf", f"{token_file_key}=$({driver_token.TOKEN_FILE_ENV})"]
    for key, variable in (file_keys or {}).items():
        args += ["--conf", f"{key}=$({variable})"]
    if use_pod_ip:  # executors reach the driver at its pod IP (Spark 4.3's default)
        args += ["--conf", "spark.driver.host=$(SPARK_DRIVER_BIND_ADDRESS)"]
    if files.py_files:
        args += ["--py-files", ",".join(files.py_files)]
    if files.files:
        args += ["--files", ",".join(files.files)]
    return [*args, files.app, *app_args]


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
            raise UsageError(
                f"spark.kubernetes.driverEnv.{name} is invalid: {name!r} is not an environment variable name"
            )
        env.append({"name": name, "value": value})
    return env


def driver_image(properties: Mapping[str, str]) -> str:
    """The driver container's image; a usage error when none is configured."""
    image = properties.get("spark.kubernetes.driver.container.image") or properties.get(
        "spark.kubernetes.container.image"
    )
    if not image:
        raise UsageError("no driver image: set spark.kubernetes.container.image")
    return image


def build_driver_pod(properties: Mapping[str, str], names: DriverNames, **options: Any) -> Obj:
    """The driver pod of :func:`build_driver` (same arguments), without the claims to create with it."""
    return build_driver(properties, names, **options)[0]


def build_driver(
    properties: Mapping[str, str],
    names: DriverNames,
    *,
    app_name: str,
    image: str,
    args: Sequence[str],
    files: DriverFiles,
    data: Mapping[str, str],
    token_secret: str | None = None,
    secret_conf_secret: str | None = None,
    mounted: Sequence[str] = (driver_token.TOKEN_KEY,),
    steps: Sequence[DriverFeatureStep] = (),
) -> tuple[Obj, list[Obj]]:
    """The driver pod, and the PersistentVolumeClaims to create once it exists (owned by it): the basic
    pod (:func:`_basic_driver_pod`), then the driver's feature steps (:mod:`k8s_backend.pods.driver`:
    secrets, secretKeyRef env, volumes, then the user's ``steps``). A configuration problem is a
    :class:`UsageError` naming the key."""
    try:
        builder = DriverPodBuilder(properties, steps)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    pod, container, index = _basic_driver_pod(
        properties,
        names,
        app_name=app_name,
        image=image,
        args=args,
        files=files,
        data=data,
        token_secret=token_secret,
        secret_conf_secret=secret_conf_secret,
        mounted=mounted,
    )
    ctx = DriverContext(
        properties=properties, app_id=names.app_id, pod_name=names.pod, namespace=names.namespace
    )
    built, claims = builder.build(SparkPod(pod, container), ctx)
    pod = built.pod
    spec = section(pod, "spec")
    containers = list(spec.get("containers") or [])
    containers.insert(min(index, len(containers)), built.container)
    spec["containers"] = containers
    for claim in claims:
        claim["metadata"]["namespace"] = names.namespace
    return pod, claims


def _basic_driver_pod(
    properties: Mapping[str, str],
    names: DriverNames,
    *,
    app_name: str,
    image: str,
    args: Sequence[str],
    files: DriverFiles,
    data: Mapping[str, str],
    token_secret: str | None = None,
    secret_conf_secret: str | None = None,
    mounted: Sequence[str] = (driver_token.TOKEN_KEY,),
) -> tuple[Obj, Obj, int]:
    """Spark's BasicDriverFeatureStep with the template and credentials: the pod without its Spark
    container, that container, and its index among the template's containers. The template (if any),
    then Spark's settings on top; ``token_secret`` names the Secret holding the driver's API token and
    credential files (its items ``mounted``), mounted read-only, ``secret_conf_secret`` the one holding
    its secret properties (see :mod:`k8s_backend.cli.common.driver_token`)."""
    pod, container, index = _template(properties)
    _pod_settings(pod, properties, names, app_name)
    _container_settings(container, properties, image, args)
    env = _env(properties, names.app_id)
    if token_secret:
        env += driver_token.mounted_env(mounted)
    if secret_conf_secret:
        env.append(driver_token.secret_conf_env(secret_conf_secret))
    upsert_named(container, "env", env)
    mounts: list[Obj] = [{"name": CONF_VOLUME, "mountPath": SPARK_CONF_DIR_INTERNAL}]
    volumes: list[Obj] = [
        {"name": CONF_VOLUME, "configMap": {"name": names.config_map, "items": conf_items(data, files)}}
    ]
    if files.shipped:
        mounts.append({"name": FILES_VOLUME, "mountPath": APP_FILES_DIR, "readOnly": True})
        volumes.append(
            {"name": FILES_VOLUME, "configMap": {"name": names.config_map, "items": file_items(files)}}
        )
    if token_secret:
        mounts.append(driver_token.volume_mount())
        volumes.append(driver_token.volume(token_secret, mounted))
    add_volume_mounts(container, mounts)
    add_volumes(pod, volumes)
    pod["apiVersion"] = "v1"
    pod["kind"] = "Pod"
    return pod, container, index


def _pod_settings(pod: Obj, properties: Mapping[str, str], names: DriverNames, app_name: str) -> None:
    """Metadata, restart policy, service account, node selector, pull secrets and scheduler."""
    meta = section(pod, "metadata")
    meta["name"] = names.pod
    meta["namespace"] = names.namespace
    meta["labels"] = {**(meta.get("labels") or {}), **driver_labels(properties, names.app_id, app_name)}
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


def _container_settings(
    container: Obj, properties: Mapping[str, str], image: str, args: Sequence[str]
) -> None:
    """Name, image, arguments, security context, ports and resources of the Spark container."""
    resources = driver_resources(properties)
    ports = driver_ports(properties)
    container["name"] = container.get("name") or DRIVER_CONTAINER_NAME
    container["image"] = image
    container["imagePullPolicy"] = properties.get(
        "spark.kubernetes.container.image.pullPolicy", "IfNotPresent"
    )
    container.pop("command", None)  # the image's entrypoint passes our arguments through
    container["args"] = list(args)
    # A failed driver's last log lines become its termination message, which `status` shows.
    container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
    # As Spark 4.3 does for its containers: always set, over a template's value (the rest of a
    # template's securityContext is kept).
    security = section(container, "securityContext")
    security["allowPrivilegeEscalation"] = _allow_privilege_escalation(properties)
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
    requests = {**(current.get("requests") or {}), "memory": resources.memory, "cpu": resources.cpu_request}
    limits = {**(current.get("limits") or {}), "memory": resources.memory}
    if resources.cpu_limit:
        limits["cpu"] = resources.cpu_limit
    container["resources"] = {**current, "requests": requests, "limits": limits}


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


def build_service(properties: Mapping[str, str], names: DriverNames, driver_pod: Obj) -> Obj:
    """The headless Service executors reach the driver through, owned by the driver pod (with Spark's
    IP family settings and ``publishNotReadyAddresses``)."""
    ports = driver_ports(properties)
    try:
        settings = service_spec_settings(properties)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    annotations = {
        **with_prefix(properties, "spark.kubernetes.driver.service.annotation."),
        DRIVER_POD_ANNOTATION: names.pod,
    }
    labels = {**with_prefix(properties, "spark.kubernetes.driver.service.label."), **app_labels(names.app_id)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.service,
            "namespace": names.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(driver_pod)],
        },
        "spec": {
            "clusterIP": "None",
            **settings,
            "selector": app_labels(names.app_id),
            "ports": [
                {
                    "name": DRIVER_PORT_NAME,
                    "port": ports.driver,
                    "targetPort": ports.driver,
                    "protocol": "TCP",
                },
                {
                    "name": BLOCK_MANAGER_PORT_NAME,
                    "port": ports.block_manager,
                    "targetPort": ports.block_manager,
                    "protocol": "TCP",
                },
                {"name": UI_PORT_NAME, "port": ports.ui, "targetPort": ports.ui, "protocol": "TCP"},
            ],
        },
    }


def build_config_map(
    names: DriverNames, driver_pod: Obj, data: Mapping[str, str], binary: Mapping[str, str]
) -> Obj:
    """The driver's ConfigMap (``spark.properties``, conf files, application files), owned by the pod."""
    body: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.config_map,
            "namespace": names.namespace,
            "labels": app_labels(names.app_id),
            "annotations": {DRIVER_POD_ANNOTATION: names.pod},
            "ownerReferences": [owner_reference(driver_pod)],
        },
        "immutable": True,
        "data": dict(data),
    }
    if binary:
        body["binaryData"] = dict(binary)
    return body
