"""Cluster mode's objects: the driver pod, its headless Service and its ConfigMap, as usage errors.

The pod is :class:`~k8s_backend.pods.driver.DriverPodBuilder`'s (the template, then Spark's driver steps:
basic, credentials, secrets, volumes, Hadoop conf, local dirs, then user steps). Its container runs
``k8s-backend submit --deploy-mode client`` on the shipped files (:func:`driver_args`), so the driver
inside the pod runs the application with k8s_backend's backend. The Service and ConfigMap are owned by
the pod, so deleting the pod removes everything the application created.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.submit.driver_files import DriverFiles, conf_items, file_items
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import SPARK_CONF_DIR_INTERNAL, SPARK_CONF_FILE_NAME
from k8s_backend.pods.driver import BuiltDriver, DriverContext, DriverFeatureStep, DriverPodBuilder
from k8s_backend.pods.driver.basic import (
    BLOCK_MANAGER_PORT_NAME,
    CONF_VOLUME,
    DRIVER_CONTAINER_NAME,
    DRIVER_PORT_NAME,
    FILES_VOLUME,
    RESERVED_DRIVER_LABELS,
    UI_PORT_NAME,
    DriverBasics,
)
from k8s_backend.pods.driver.credential_files import TOKEN_FILE_ENV, TOKEN_KEY
from k8s_backend.pods.driver.credentials import DriverSecret
from k8s_backend.pods.driver.names import DriverNames, app_labels, with_prefix
from k8s_backend.pods.driver.service import driver_service
from k8s_backend.pods.driver.template import DRIVER_TEMPLATE_KEY
from k8s_backend.pods.objects import owner_reference

__all__ = [
    "BLOCK_MANAGER_PORT_NAME",
    "CONF_VOLUME",
    "DRIVER_CONTAINER_NAME",
    "DRIVER_PORT_NAME",
    "DRIVER_TEMPLATE_KEY",
    "FILES_VOLUME",
    "RESERVED_DRIVER_LABELS",
    "UI_PORT_NAME",
    "DriverNames",
    "app_labels",
    "build_config_map",
    "build_driver",
    "build_driver_pod",
    "build_service",
    "driver_args",
    "driver_image",
    "with_prefix",
]


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
        args += ["--conf", f"{token_file_key}=$({TOKEN_FILE_ENV})"]
    for key, variable in (file_keys or {}).items():
        args += ["--conf", f"{key}=$({variable})"]
    if use_pod_ip:  # executors reach the driver at its pod IP (Spark 4.3's default)
        args += ["--conf", "spark.driver.host=$(SPARK_DRIVER_BIND_ADDRESS)"]
    if files.py_files:
        args += ["--py-files", ",".join(files.py_files)]
    if files.files:
        args += ["--files", ",".join(files.files)]
    return [*args, files.app, *app_args]


def driver_image(properties: Mapping[str, str]) -> str:
    """The driver container's image; a usage error when none is configured."""
    image = properties.get("spark.kubernetes.driver.container.image") or properties.get(
        "spark.kubernetes.container.image"
    )
    if not image:
        raise UsageError("no driver image: set spark.kubernetes.container.image")
    return image


def build_driver_pod(properties: Mapping[str, str], names: DriverNames, **options: Any) -> Obj:
    """The driver pod of :func:`build_driver` (same arguments), without the objects to create with it."""
    return build_driver(properties, names, **options).pod


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
    mounted: Sequence[str] = (TOKEN_KEY,),
    steps: Sequence[DriverFeatureStep] = (),
) -> BuiltDriver:
    """The driver pod, and its Service and PersistentVolumeClaims to create once it exists (owned by
    it), built by :class:`~k8s_backend.pods.driver.DriverPodBuilder` (the user's ``steps`` last).
    ``token_secret`` names the Secret holding the driver's API token and credential files (its items
    ``mounted``), ``secret_conf_secret`` the one holding its secret properties. A configuration problem
    is a :class:`UsageError` naming the key."""
    basics = DriverBasics(
        names=names,
        app_name=app_name,
        image=image,
        args=tuple(args),
        conf_items=tuple(conf_items(data, files)),
        file_items=tuple(file_items(files)) if files.shipped else (),
    )
    secret = DriverSecret(
        mounted_from=token_secret, items=tuple(mounted), secret_conf_from=secret_conf_secret
    )
    ctx = DriverContext(
        properties=properties, app_id=names.app_id, pod_name=names.pod, namespace=names.namespace
    )
    try:
        return DriverPodBuilder(properties, steps, basics=basics, secret=secret).build_pod(ctx)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def build_service(properties: Mapping[str, str], names: DriverNames, driver_pod: Obj) -> Obj:
    """:func:`~k8s_backend.pods.driver.service.driver_service`, a bad value a usage error naming the key."""
    try:
        return driver_service(properties, names, driver_pod)
    except ConfigError as error:
        raise UsageError(str(error)) from None


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
