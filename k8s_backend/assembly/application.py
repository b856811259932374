"""What an application is, decided and checked before anything is created on the cluster or any
thread starts: its executor identity, the config map, auth Secret and PodGroup it needs, and how its
pods are read."""

from __future__ import annotations

import secrets

import attrs

from k8s_backend.allocation.driver_pod import fetch_driver_pod
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.backend.hooks import StartPlan
from k8s_backend.conf import syntax
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.gang.setup import GangSetup
from k8s_backend.kube.labels import SPARK_APP_ID_LABEL
from k8s_backend.kube.leases import heartbeat_lease_for
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.pods.auth_secret import build_executor_auth_secret, executor_auth_secret_name
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.config_map import build_executor_config_map, executor_config_map_name
from k8s_backend.pods.names import resource_name_prefix
from k8s_backend.pods.steps.basic import resolve_auth_secret
from k8s_backend.snapshots.states import PodStateRules


@attrs.frozen
class Application:
    """What this application is, decided (and checked) before anything is created on the cluster."""

    conf: KubernetesConf
    app_id: str
    driver_url: str
    gang: GangSetup
    builder: ExecutorPodBuilder
    identity: AllocatorIdentity
    rules: PodStateRules
    plan: StartPlan  # without recovery and the driver wait, which need the parts


def check_identity(app_id: str, driver_url: str) -> None:
    """Refuse an application id the API server refuses as a label value, or an empty driver address."""
    if not app_id:
        raise ConfigError("app_id must be a non-empty application id (spark.app.id)", key="spark.app.id")
    problem = syntax.label_value_problem(app_id)
    if problem is not None:  # every object of the application carries it as its spark-app-selector label
        raise ConfigError(
            f"spark.app.id={app_id} is invalid: it is the {SPARK_APP_ID_LABEL} label of every executor pod, "
            f"and a label value {problem}",
            key="spark.app.id",
            value=app_id,
        )
    if not driver_url:
        raise ConfigError("driver_url must be the driver's spark:// RPC address", key="spark.driver.host")


def plan_application(
    conf: KubernetesConf,
    app_id: str,
    driver_url: str,
    api: KubernetesApi,
    gang: GangSetup,
    builder: ExecutorPodBuilder,
) -> Application:
    """The executor identity, the config map, the auth Secret and the PodGroup (the driver pod must
    exist)."""
    driver_pod = fetch_driver_pod(api, conf.namespace, conf.driver.pod_name)
    unique = secrets.token_hex(5)
    lease = heartbeat_lease_for(
        app_id, driver_pod_name=conf.driver.pod_name, enabled=conf.driver.heartbeat_enabled
    )
    config_map = None
    if not conf.executor.disable_config_map:
        config_map = build_executor_config_map(
            conf,
            app_id=app_id,
            name=executor_config_map_name(unique),
            driver_pod=driver_pod,
            conf_dir=builder.facts.conf_dir,
            heartbeat_lease=lease,
        )
    auth_secret = None
    secret_value = resolve_auth_secret(conf, builder.facts)
    if secret_value is not None:  # in a Secret, not in every pod spec as Spark does
        auth_secret = build_executor_auth_secret(
            conf,
            app_id=app_id,
            name=executor_auth_secret_name(unique),
            secret=secret_value,
            driver_pod=driver_pod,
            heartbeat_lease=lease,
        )
    identity = AllocatorIdentity(
        app_id=app_id,
        driver_url=driver_url,
        pod_name_prefix=conf.executor.pod_name_prefix or resource_name_prefix(conf.app_name),
        driver_pod=driver_pod,
        config_map_name=None if config_map is None else config_map["metadata"]["name"],
        auth_secret_name=None if auth_secret is None else auth_secret["metadata"]["name"],
    )
    pod_group = gang.pod_group(builder, app_id=app_id, driver_url=driver_url, driver_pod=driver_pod)
    return Application(
        conf=conf,
        app_id=app_id,
        driver_url=driver_url,
        gang=gang,
        builder=builder,
        identity=identity,
        rules=PodStateRules(conf.executor.container_name, conf.snapshots.check_all_containers),
        plan=StartPlan(pod_group=pod_group, config_map=config_map, auth_secret=auth_secret),
    )
