"""The driver's headless Service (Spark's DriverServiceFeatureStep), which executors reach it through.

As Spark 4.x, ``ipFamilyPolicy`` (``SingleStack`` by default) and ``ipFamilies`` (``IPv4`` by default)
are always written, and ``publishNotReadyAddresses`` when set. The Service is owned by the driver pod,
so it is made once the pod exists (cluster mode checks its settings before anything is created).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from k8s_backend.conf.units import parse_bool
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.port import Obj
from k8s_backend.pods.driver.basic import BLOCK_MANAGER_PORT_NAME, DRIVER_PORT_NAME, UI_PORT_NAME
from k8s_backend.pods.driver.names import DriverNames, app_labels, with_prefix
from k8s_backend.pods.driver.sizing import driver_ports
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.objects import owner_reference
from k8s_backend.pods.step import SparkPod

IP_FAMILY_POLICY_KEY = "spark.kubernetes.driver.service.ipFamilyPolicy"
IP_FAMILIES_KEY = "spark.kubernetes.driver.service.ipFamilies"
PUBLISH_NOT_READY_KEY = "spark.kubernetes.driver.service.publishNotReadyAddresses"
IP_FAMILY_POLICIES = ("SingleStack", "PreferDualStack", "RequireDualStack")
IP_FAMILIES = ("IPv4", "IPv6")


def service_spec_settings(properties: Mapping[str, str]) -> Obj:
    """The Service spec fields these keys set; a :class:`ConfigError` naming the key for a bad value."""
    policy = properties.get(IP_FAMILY_POLICY_KEY, "SingleStack")
    if policy not in IP_FAMILY_POLICIES:
        raise ConfigError(
            f"{IP_FAMILY_POLICY_KEY}={policy} is invalid: use one of {', '.join(IP_FAMILY_POLICIES)}",
            key=IP_FAMILY_POLICY_KEY,
            value=policy,
        )
    raw = properties.get(IP_FAMILIES_KEY, "IPv4")
    families = [f.strip() for f in raw.split(",") if f.strip()]
    bad = [f for f in families if f not in IP_FAMILIES]
    if not families or bad or len(set(families)) != len(families):
        raise ConfigError(
            f"{IP_FAMILIES_KEY}={raw} is invalid: a comma-separated list of IPv4 and IPv6, each at most once",
            key=IP_FAMILIES_KEY,
            value=raw,
        )
    if policy == "SingleStack" and len(families) > 1:
        # The API server refuses it too, after the pod exists: say it before anything is created.
        raise ConfigError(
            f"{IP_FAMILIES_KEY}={raw} lists two families but {IP_FAMILY_POLICY_KEY} is SingleStack: "
            "set the policy to PreferDualStack or RequireDualStack, or list one family",
            key=IP_FAMILIES_KEY,
            value=raw,
        )
    settings: Obj = {"ipFamilyPolicy": policy, "ipFamilies": families}
    if PUBLISH_NOT_READY_KEY in properties:
        settings["publishNotReadyAddresses"] = parse_bool(
            properties[PUBLISH_NOT_READY_KEY], key=PUBLISH_NOT_READY_KEY
        )
    return settings


def driver_service(properties: Mapping[str, str], names: DriverNames, driver_pod: Obj | None = None) -> Obj:
    """The headless Service executors reach the driver through, owned by ``driver_pod`` when given (with
    Spark's IP family settings and ``publishNotReadyAddresses``); a :class:`ConfigError` naming a bad
    key."""
    ports = driver_ports(properties)
    settings = service_spec_settings(properties)
    annotations = {
        **with_prefix(properties, "spark.kubernetes.driver.service.annotation."),
        DRIVER_POD_ANNOTATION: names.pod,
    }
    labels = {**with_prefix(properties, "spark.kubernetes.driver.service.label."), **app_labels(names.app_id)}
    metadata: Obj = {
        "name": names.service,
        "namespace": names.namespace,
        "labels": labels,
        "annotations": annotations,
    }
    if driver_pod is not None:
        metadata["ownerReferences"] = [owner_reference(driver_pod)]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": "None",
            **settings,
            "selector": app_labels(names.app_id),
            "ports": [
                {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
                for name, port in (
                    (DRIVER_PORT_NAME, ports.driver),
                    (BLOCK_MANAGER_PORT_NAME, ports.block_manager),
                    (UI_PORT_NAME, ports.ui),
                )
            ],
        },
    }


def owned_by(service: Obj, driver_pod: Obj) -> Obj:
    """``service`` owned by the created ``driver_pod`` (deleting the pod deletes it)."""
    return {**service, "metadata": {**service["metadata"], "ownerReferences": [owner_reference(driver_pod)]}}


class DriverServiceStep:
    """Spark's DriverServiceFeatureStep: the driver's Service, made with the pod (checked when the step is
    made) and created once the pod exists, owned by it. The pod itself is left as it is: cluster mode
    points ``spark.driver.host`` at the Service in the driver's properties."""

    def __init__(self, properties: Mapping[str, str], names: DriverNames) -> None:
        self._service = driver_service(properties, names)

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return (self._service,)
