"""Cluster mode: create the driver pod, its Service and ConfigMap, then watch the driver to its end.

The order is Spark's (``Client.run``): everything is planned and checked first; after the preflight
the pod is created, then the Service, the Secret with the driver's API token and credential files
(when it needs one: no secret is ever written into the ConfigMap) and the ConfigMap, with the pod as
their owner, so deleting the pod deletes them. Should a later step fail, what was created is deleted
again. With ``spark.kubernetes.submission.waitAppCompletion`` (default true) the command reports the
driver's state changes and exits with its exit code.

``pyk8s://local`` starts an embedded :class:`~k8s_backend.testing.LocalCluster` for the duration of
the command: its kubelet runs the driver pod's container (``k8s-backend submit --deploy-mode client``)
as a local process, whose executors are pods of the same cluster.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend.cli.common import driver_token
from k8s_backend.cli.common.cluster_api import (
    SUBMISSION_AUTH,
    Connection,
    Connector,
    Permission,
    describe_failure,
    is_local_cluster,
    official_connection,
    preflight,
    to_kubernetes_conf,
)
from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.deps import LocalClusterFactory
from k8s_backend.cli.common.driver_log import FileLogSource, LogFollower, LogSource, api_log_source
from k8s_backend.cli.common.errors import CliError, UsageError, explain_api_error
from k8s_backend.cli.common.status_watch import DriverStatus, wait_for_driver
from k8s_backend.cli.submit import driver_credentials as credentials
from k8s_backend.cli.submit import driver_files, driver_pod, driver_sizing, executor_preview, uploads
from k8s_backend.cli.submit.connection import local_image as default_local_image
from k8s_backend.cli.submit.connection import submission_connection
from k8s_backend.cli.submit.driver_reach import LOOPBACK_HOSTS, driver_master, submission_files
from k8s_backend.cli.submit.hints import manage_command
from k8s_backend.cli.submit.submission import Submission
from k8s_backend.conf.model import redacted
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.masters import pyk8s_url
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    NETWORK_POLICIES,
    PODS,
    PVCS,
    SECRETS,
    SERVICES,
    ApiError,
    NotFoundError,
    Obj,
    Resource,
)
from k8s_backend.pods.config_map import default_conf_dir, java_properties
from k8s_backend.pods.constants import ENV_HADOOP_CONF_DIR
from k8s_backend.pods.driver import DriverContext, DriverPodBuilder
from k8s_backend.pods.driver.hadoop import (
    EXECUTOR_HADOOP_CONFIG_MAP_KEY,
    HADOOP_CONFIG_MAP_KEY,
    hadoop_config_map,
    read_hadoop_conf_dir,
)
from k8s_backend.pods.driver.owned import driver_extras
from k8s_backend.pods.driver.service import owned_by
from k8s_backend.pods.names import is_dns1123_label, is_dns1123_subdomain, new_app_id, resource_name_prefix
from k8s_backend.pods.names import unique_id as new_unique_id
from k8s_backend.pods.objects import owner_reference

log = logging.getLogger(__name__)

NEEDS = (
    Permission("create", PODS),
    Permission("create", SERVICES),
    Permission("create", CONFIG_MAPS),
    Permission("watch", PODS),
    Permission("delete", PODS),
)


@attrs.frozen
class ClusterPlan:
    """Everything cluster mode creates, built and checked before any API call."""

    names: driver_pod.DriverNames
    pod: Obj
    properties: dict[str, str] = attrs.field(repr=lambda props: repr(redacted(props)))
    data: dict[str, str]
    binary: dict[str, str]
    token: str | None = attrs.field(default=None, repr=False)  # the driver's, for its Secret
    secret_conf: str | None = attrs.field(default=None, repr=False)  # secret properties, for its Secret
    # Credential files (Secret item name -> content: a kubeconfig's CA, client certificate and key).
    files: dict[str, bytes] = attrs.field(factory=dict, repr=False)
    # On-demand claims of spark.kubernetes.driver.volumes.*, created after the pod and owned by it.
    claims: tuple[Obj, ...] = ()
    # The ConfigMap of $HADOOP_CONF_DIR's files, when shipped (created after the pod, owned by it).
    hadoop_config_map: Obj | None = attrs.field(default=None, repr=False)
    # What the driver steps own besides (krb5.conf ConfigMap, keytab Secret, executors' NetworkPolicy).
    owned: tuple[Obj, ...] = attrs.field(default=(), repr=False)

    def owned_objects(self, created_pod: Obj) -> list[tuple[Resource, Obj]]:
        """The steps' owned objects with the pod as their owner, each with where it is created."""
        return [
            (
                _OWNED_KINDS[body["kind"]],
                {**body, "metadata": {**body["metadata"], "ownerReferences": [owner_reference(created_pod)]}},
            )
            for body in self.owned
        ]

    # The driver's Service (the driver pod builder's Service step), owned by the pod once it exists.
    service_body: Obj = attrs.field(kw_only=True, repr=False)

    def owned_hadoop_config_map(self, created_pod: Obj) -> Obj | None:
        body = self.hadoop_config_map
        if body is None:
            return None
        return {**body, "metadata": {**body["metadata"], "ownerReferences": [owner_reference(created_pod)]}}

    def owned_claims(self, created_pod: Obj) -> list[Obj]:
        return [
            {**claim, "metadata": {**claim["metadata"], "ownerReferences": [owner_reference(created_pod)]}}
            for claim in self.claims
        ]

    def service(self, created_pod: Obj) -> Obj:
        return owned_by(self.service_body, created_pod)

    def secret(self, created_pod: Obj) -> Obj | None:
        """The Secret holding the driver's API token and secret properties, or None when it needs none."""
        if not self._needs_secret:
            return None
        names = self.names
        labels = driver_pod.app_labels(names.app_id)
        return driver_token.build_secret(
            names.token_secret,
            names.namespace,
            labels,
            created_pod,
            token=self.token,
            secret_conf=self.secret_conf,
            files=self.files,
        )

    @property
    def _needs_secret(self) -> bool:
        return self.token is not None or self.secret_conf is not None or bool(self.files)

    @property
    def needs(self) -> tuple[Permission, ...]:
        """The permissions creating this plan takes."""
        needs = (*NEEDS, Permission("create", SECRETS)) if self._needs_secret else NEEDS
        needs = (*needs, Permission("create", PVCS)) if self.claims else needs
        owned = {_OWNED_KINDS[body["kind"]] for body in self.owned} - {CONFIG_MAPS}  # in NEEDS already
        return (*needs, *(Permission("create", r) for r in sorted(owned, key=lambda r: r.plural)))

    def config_map(self, created_pod: Obj) -> Obj:
        return driver_pod.build_config_map(self.names, created_pod, self.data, self.binary)


def plan_names(
    sub: Submission, *, app_id: str | None = None, unique_id: str | None = None
) -> driver_pod.DriverNames:
    """Application id and object names (Spark's: ``<prefix>-driver``, ``<prefix>-driver-svc``,
    ``spark-drv-<id>-conf-map``)."""
    props = sub.properties
    uid = unique_id or new_unique_id()
    prefix = props.get("spark.kubernetes.driver.resourceNamePrefix") or resource_name_prefix(sub.app_name)
    pod = props.get("spark.kubernetes.driver.pod.name") or f"{prefix}-driver"
    if not is_dns1123_subdomain(pod):
        raise UsageError(
            f"driver pod name {pod!r} is not a valid Kubernetes name (lowercase letters, digits, '-', '.'); "
            "set spark.kubernetes.driver.pod.name or a shorter --name"
        )
    service = f"{prefix}-driver-svc"
    if not is_dns1123_label(service):
        service = f"spark-{uid}-driver-svc"
    return driver_pod.DriverNames(
        app_id=app_id or props.get("spark.app.id") or new_app_id(),
        pod=pod,
        service=service,
        config_map=f"spark-drv-{uid}-conf-map",
        namespace=sub.namespace,
    )


def plan_cluster(
    sub: Submission,
    master: str,
    *,
    api_url: str = "",
    local_image: str | None = None,
    names: driver_pod.DriverNames | None = None,
    environ: dict[str, str] | None = None,
    submission_token: str | None = None,
    submission_files: dict[str, bytes] | None = None,
    submission_verifies_tls: bool = True,
    driver_contents: Mapping[str, bytes] | None = None,
) -> ClusterPlan:
    """Build the driver pod, the driver's properties and the ConfigMap content; usage errors for any
    bad value (nothing has been created yet).

    ``submission_token`` is the token the submission uses when it is not in the properties (a
    kubeconfig's, a ``pyk8s://local`` cluster's), ``submission_files`` the contents of the CA, client
    certificate and key its client uses (keyed by property suffix, ``caCertFile``...); a driver on the
    same loopback server reuses them (and does not check the server's certificate either unless
    ``submission_verifies_tls``). ``driver_contents`` are the files ``spark.kubernetes.authenticate.driver.*``
    names, read already (:func:`~k8s_backend.cli.submit.driver_credentials.read_driver_files`; read here
    if None).
    """
    # Over 60 lines: every usage check of a cluster-mode submission runs here, before anything is created.
    names = names or plan_names(sub)
    props = sub.properties
    app_files = driver_files.plan_submission_files(sub)  # shipped in the ConfigMap, unless uploaded
    ports = driver_sizing.driver_ports(props)
    if driver_contents is None:
        driver_contents = credentials.read_driver_files(props)
    properties = {
        k: v for k, v in props.items() if not k.startswith(SUBMISSION_AUTH) and k not in _PASSED_AS_ARGS
    }
    file_keys = credentials.to_mounted_family(properties, driver_contents)
    shipped: dict[str, bytes] = {}
    family = credentials.CLIENT
    if master == pyk8s_url(api_url):
        borrowed, shipped = driver_token.loopback_credentials(
            props, submission_token, submission_files, verify_tls=submission_verifies_tls
        )
        borrowed, shipped, family = credentials.join_mounted_family(properties, borrowed, shipped)
        properties.update(borrowed)
    if local_image:
        properties.setdefault("spark.kubernetes.container.image", local_image)
    prefix = names.pod.removesuffix("-driver")
    properties.update(
        {
            "spark.master": master,
            "spark.app.id": names.app_id,
            "spark.app.name": sub.app_name,
            "spark.submit.deployMode": "cluster",
            "spark.kubernetes.namespace": names.namespace,
            "spark.kubernetes.driver.pod.name": names.pod,
            "spark.kubernetes.submitInDriver": "true",
            "spark.driver.host": names.service_host,
            "spark.driver.port": str(ports.driver),
            "spark.driver.blockManager.port": str(ports.block_manager),
            f"spark.kubernetes.executor.annotation.{DRIVER_POD_ANNOTATION}": names.pod,
        }
    )
    if is_dns1123_subdomain(prefix) and len(prefix) <= 237:
        properties.setdefault("spark.kubernetes.executor.podNamePrefix", prefix)
    hadoop_map = _hadoop_conf(properties, names, os.environ if environ is None else environ)
    owned = _driver_extras(properties, names)
    conf = to_kubernetes_conf(properties)  # the driver will read these: check them now
    executor_preview.check_executors(conf, app_id=names.app_id)  # and build an executor pod as it will
    token, token_file_key = driver_token.move_token_to_file(properties)
    file_keys.update(driver_token.mount_files(properties, shipped, family))
    files = driver_token.secret_files(shipped)
    files.update(credentials.secret_items(driver_contents))
    image = driver_pod.driver_image(properties)
    plain, secret = driver_token.split_secret_properties(properties)
    secret_conf = java_properties(secret, "Secret Spark properties of the driver") if secret else None
    data, binary = driver_files.config_map_content(
        plain,
        app_files,
        conf_dir=default_conf_dir(conf, environ),
        max_size=conf.executor.config_map_max_size,
        name=names.config_map,
    )
    args = driver_pod.driver_args(
        sub.driver_command,
        app_files,
        sub.app_args,
        use_pod_ip=conf.executor.use_driver_pod_ip,
        token_file_key=token_file_key,
        file_keys=file_keys,
    )
    mounted = [driver_token.TOKEN_KEY] if token is not None else []
    mounted += list(files)
    built = driver_pod.build_driver(
        properties,
        names,
        app_name=sub.app_name,
        image=image,
        args=args,
        files=app_files,
        data=data,
        token_secret=names.token_secret if mounted else None,
        secret_conf_secret=names.token_secret if secret_conf is not None else None,
        mounted=mounted,
    )
    return ClusterPlan(
        names,
        built.pod,
        properties,
        data,
        binary,
        token,
        secret_conf,
        files,
        built.claims,
        hadoop_map,
        owned,
        service_body=built.service,
    )


def _hadoop_conf(
    properties: dict[str, str], names: driver_pod.DriverNames, environ: Mapping[str, str]
) -> Obj | None:
    """As Spark's HadoopConfDriverFeatureStep: the named ConfigMap, else one of ``$HADOOP_CONF_DIR``'s
    files; the driver step and the executors mount it through the internal executor key. Returns the
    ConfigMap to create, if any."""
    named = properties.get(HADOOP_CONFIG_MAP_KEY)
    conf_dir = environ.get(ENV_HADOOP_CONF_DIR)
    if named:
        properties[EXECUTOR_HADOOP_CONFIG_MAP_KEY] = named
        return None
    if not conf_dir:
        return None
    try:
        data = read_hadoop_conf_dir(conf_dir)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    name = names.config_map.removesuffix("-conf-map") + "-hadoop-config"
    properties[EXECUTOR_HADOOP_CONFIG_MAP_KEY] = name
    return hadoop_config_map(name, names.namespace, driver_pod.app_labels(names.app_id), data)


_OWNED_KINDS = {"ConfigMap": CONFIG_MAPS, "Secret": SECRETS, "NetworkPolicy": NETWORK_POLICIES}


def _driver_extras(properties: dict[str, str], names: driver_pod.DriverNames) -> tuple[Obj, ...]:
    """As Spark's Client.run: the driver steps' properties (the shipped keytab's path in the pod) go
    into ``properties`` before they are written; returns the objects the steps own. The builder is made
    here once more than for the pod (its steps are cheap to make and read no file until asked)."""
    ctx = DriverContext(
        properties=properties, app_id=names.app_id, pod_name=names.pod, namespace=names.namespace
    )
    try:
        updates, owned = driver_extras(DriverPodBuilder(properties).steps, ctx)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    for body in owned:
        if body.get("kind") not in _OWNED_KINDS:
            raise UsageError(
                f"a driver feature step owns a {body.get('kind')}: only {', '.join(_OWNED_KINDS)} are "
                "created with the driver; fix the step"
            )
    properties.update(updates)
    return tuple(owned)


# Not in the driver's properties: passed as arguments, or how this machine reaches the cluster (a local
# kubeconfig path and context mean nothing in the driver's pod).
_PASSED_AS_ARGS = (
    "spark.submit.pyFiles",
    "spark.files",
    "spark.kubernetes.kubeconfig",
    "spark.kubernetes.context",
)


def create_objects(connection: Connection, plan: ClusterPlan, console: Console) -> Obj:
    """Create the pod, then its Service, token Secret and ConfigMap; on failure delete what was created."""
    api, ns = connection.api, plan.names.namespace
    try:
        pod = api.create(PODS, ns, plan.pod)
    except ApiError as error:
        raise explain_api_error(
            error, connection.endpoint, verb="create", resource="pods", namespace=ns
        ) from None
    created: list[tuple[Resource, str]] = [(PODS, plan.names.pod)]
    try:
        owned = (
            (SERVICES, plan.service(pod)),
            (SECRETS, plan.secret(pod)),
            (CONFIG_MAPS, plan.config_map(pod)),
            (CONFIG_MAPS, plan.owned_hadoop_config_map(pod)),
            *((PVCS, claim) for claim in plan.owned_claims(pod)),
            *plan.owned_objects(pod),
        )
        for resource, body in owned:
            if body is None:
                continue
            try:
                api.create(resource, ns, body)
            except ApiError as error:
                raise explain_api_error(
                    error, connection.endpoint, verb="create", resource=resource.plural, namespace=ns
                ) from None
            created.append((resource, body["metadata"]["name"]))
    except CliError:
        console.info("Creation failed; deleting what was created for this application")
        for resource, name in reversed(created):
            with contextlib.suppress(NotFoundError, ApiError):
                api.delete(resource, ns, name, grace_period_seconds=0)
        raise
    return pod


def follower_for(
    connection: Connection, plan: ClusterPlan, console: Console, cluster: Any
) -> LogFollower | None:
    container = plan.pod["spec"]["containers"][0]["name"]
    names = plan.names
    source: LogSource | None
    if cluster is not None:
        kubelet = cluster.kubelet
        source = FileLogSource(lambda: kubelet.log_path(names.namespace, names.pod, container))
    else:
        source = api_log_source(connection.api, names.namespace, names.pod, container)
    if source is None:
        console.warning(
            "--follow-log: this API client cannot stream pod logs; run "
            f"`kubectl logs -f -n {names.namespace} {names.pod}`"
        )
        return None
    return LogFollower(source, console.result)


def run_cluster(
    sub: Submission,
    console: Console,
    *,
    connect: Connector = official_connection,
    local_cluster: LocalClusterFactory | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Submit in cluster mode; the exit code is the driver's when waiting, else 0 (``environ``: where
    the printed commands save an inline token, see :mod:`k8s_backend.cli.submit.hints`)."""
    driver_contents = credentials.read_driver_files(sub.properties)  # before reaching the cluster
    with submission_connection(sub, connect, local_cluster) as (connection, cluster):
        local_url = cluster.url if cluster is not None else None
        local_https = is_local_cluster(connection, LOOPBACK_HOSTS)
        master = driver_master(sub, connection.endpoint.url, local_url, local_https=local_https)
        local_image = default_local_image() if cluster is not None else None
        plan = plan_cluster(
            sub,
            master,
            api_url=connection.endpoint.url,
            local_image=local_image,
            submission_token=getattr(cluster, "token", None) if cluster is not None else connection.token,
            submission_files=submission_files(connection, cluster),
            submission_verifies_tls=connection.verify_tls,
            driver_contents=driver_contents,
        )
        preflight(connection, sub.namespace, plan.needs)
        # spark.kubernetes.file.upload.path; deleted if creation fails
        with uploads.uploaded(sub.uploads, console):
            create_objects(connection, plan, console)
        names = plan.names
        console.info(
            f"Submitted application {sub.app_name} (application id {names.app_id}); "
            f"submission ID {names.submission_id}"
        )
        if not sub.wait:
            console.info(
                "Deployed; not waiting (spark.kubernetes.submission.waitAppCompletion=false). Follow it with "
                f"`{manage_command(sub, 'status', names.submission_id, environ)}`, stop it with "
                f"`{manage_command(sub, 'kill', names.submission_id, environ)}`"
            )
            return uploads.finished(sub.uploads, console, 0, ended=False)
        code = _wait(sub, connection, plan, console, cluster, environ)
        return uploads.finished(sub.uploads, console, code, ended=code != 130 or cluster is not None)


def _wait(
    sub: Submission,
    connection: Connection,
    plan: ClusterPlan,
    console: Console,
    cluster: Any,
    environ: Mapping[str, str] | None,
) -> int:
    names = plan.names
    status = DriverStatus(names.pod, names.namespace, console.info)
    follower = follower_for(connection, plan, console, cluster) if sub.follow_log else None
    if follower is not None:
        follower.start()
    try:
        code = wait_for_driver(connection.api, status)
    except KeyboardInterrupt:
        if cluster is None:
            console.info(
                "Stopped watching; the application keeps running "
                f"(`{manage_command(sub, 'status', names.submission_id, environ)}`, "
                f"`{manage_command(sub, 'kill', names.submission_id, environ)}`)"
            )
        return 130
    except ApiError as error:
        raise CliError(
            describe_failure(error, connection, verb="watch", resource="pods", namespace=names.namespace)
        ) from None
    finally:
        if follower is not None:
            follower.finish()
    console.info(f"Application {sub.app_name} ({names.app_id}) finished with exit code {code}")
    return code
