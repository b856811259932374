"""The names and labels of one cluster-mode application's objects (driver pod, Service, ConfigMap,
Secret), as Spark's KubernetesDriverConf names them."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from k8s_backend.pods.constants import DRIVER_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL
from k8s_backend.pods.driver.credential_files import secret_name


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
        return secret_name(self.pod, self.config_map.removesuffix("-conf-map"))


def app_labels(app_id: str) -> dict[str, str]:
    """The labels that select the driver (and the Service's and ConfigMap's application)."""
    return {SPARK_APP_ID_LABEL: app_id, SPARK_ROLE_LABEL: DRIVER_ROLE}


def with_prefix(properties: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The properties under ``prefix``, by the rest of their key (sorted; the bare prefix left out)."""
    return {
        k[len(prefix) :]: v for k, v in sorted(properties.items()) if k.startswith(prefix) and k != prefix
    }
