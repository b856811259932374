"""Reaching the API server from the command line: which server and credentials, and a preflight.

The submission side reads Spark's submission settings: ``spark.master`` names the server (not
``spark.kubernetes.driver.master``, which is the driver's), credentials come from
``spark.kubernetes.authenticate.submission.*`` when any is set (never from the cluster-mode driver's
``spark.kubernetes.authenticate.driver[.mounted].*``), and timeouts from
``spark.kubernetes.submission.*Timeout``. The preflight makes one cheap read (a LIST of driver pods)
and asks the server, with SelfSubjectAccessReviews, whether the verbs the command needs are allowed,
so that an unreachable server, bad credentials or a missing permission are reported before anything
is created.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from k8s_backend.cli.common.errors import ApiEndpoint, UsageError, explain_api_error, permission_error
from k8s_backend.conf import keys
from k8s_backend.conf.keys_driver import AUTH_PREFIXES, AUTH_SUFFIXES
from k8s_backend.conf.model import ApiClientConf, KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube import masters
from k8s_backend.kube.labels import DRIVER_ROLE, role_selector
from k8s_backend.kube.masters import MasterKind
from k8s_backend.kube.port import PODS, ApiError, KubernetesApi, Resource
from k8s_backend.kube.retry import RetryPolicy

log = logging.getLogger(__name__)

SUBMISSION_AUTH = "spark.kubernetes.authenticate.submission."
DRIVER_AUTH = "spark.kubernetes.authenticate.driver."
ACCESS_REVIEWS = Resource(
    "SelfSubjectAccessReview", "selfsubjectaccessreviews", group="authorization.k8s.io", namespaced=False
)


def normalize_master(master: str | None) -> str:
    """``pyk8s://...`` for a Kubernetes master (``k8s://`` is accepted as a synonym; none means
    ``pyk8s://``, the kubeconfig or in-cluster configuration); another master is a usage error."""
    try:
        return masters.normalize(master)
    except ConfigError:
        raise UsageError(
            f"--master {master}: k8s-backend runs applications on Kubernetes; use {masters.accepted_forms()}"
        ) from None


def master_kind(conf: KubernetesConf) -> MasterKind:
    """The kind of API server the checked configuration names."""
    return masters.api_url_kind(conf.api.master)


def to_kubernetes_conf(properties: Mapping[str, str]) -> KubernetesConf:
    """Parse properties, turning a :class:`ConfigError` into a usage error with the same message."""
    try:
        return KubernetesConf.from_spark_conf(dict(properties))
    except ConfigError as error:
        raise UsageError(str(error)) from None


@attrs.frozen
class Permission:
    """One verb on one resource kind (``("create", PODS)``), as RBAC names them."""

    verb: str
    resource: Resource

    def __str__(self) -> str:
        return f"{self.verb} {self.resource.plural}"


@attrs.frozen
class Connection:
    """An API client and a description of the server it talks to."""

    api: KubernetesApi
    endpoint: ApiEndpoint
    # The bearer token the client sends, whatever gave it (a kubeconfig, a --conf, a local cluster):
    # a cluster-mode driver on the same loopback server needs it too.
    token: str | None = attrs.field(default=None, repr=False)
    # The contents of the CA, client certificate and key files the client uses, keyed by the suffix of
    # the property that would name them (caCertFile, clientCertFile, clientKeyFile), whatever gave them
    # (a kubeconfig's certificate-authority-data, a --conf): such a driver needs them too.
    files: Mapping[str, bytes] = attrs.field(factory=dict, repr=False)
    verify_tls: bool = True  # False: the server's certificate is not checked (insecure-skip-tls-verify)


Connector = Callable[[ApiClientConf, str], Connection]
"""Builds a :class:`Connection` from client settings and the default namespace (injectable in tests)."""


def submission_api_conf(properties: Mapping[str, str]) -> ApiClientConf:
    """The client settings spark-submit would use to submit (see the module doc)."""
    # The cluster-mode driver's credentials (files inside its pod, or files shipped to it) are not the
    # submission's, as in Spark.
    unused = [p for p in AUTH_PREFIXES if p.startswith(DRIVER_AUTH)]
    if any(k.startswith(SUBMISSION_AUTH) for k in properties):
        unused = [p for p in AUTH_PREFIXES if p != SUBMISSION_AUTH]
    dropped = {"spark.kubernetes.driver.master", *(p + s for p in unused for s in AUTH_SUFFIXES)}
    props = {k: v for k, v in properties.items() if k not in dropped}
    api = to_kubernetes_conf(props).api
    timeouts = {}
    for field, key in (
        ("request_timeout", "spark.kubernetes.submission.requestTimeout"),
        ("connection_timeout", "spark.kubernetes.submission.connectionTimeout"),
    ):
        if key in props:
            try:
                timeouts[field] = keys.key(key).convert(props[key])
            except ConfigError as error:
                raise UsageError(str(error)) from None
    return attrs.evolve(api, **timeouts)


def official_connector(
    *, environ: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
) -> Connector:
    """A :data:`Connector` for the real adapter (official client); ``environ`` and ``retry`` default to
    the process environment and the adapter's policy (tests pass their own)."""

    def connect(api_conf: ApiClientConf, namespace: str) -> Connection:
        from k8s_backend.kube.client import OfficialKubernetesApi
        from k8s_backend.kube.config import build_client_settings

        try:
            settings = build_client_settings(api_conf, environ=environ)
            api = OfficialKubernetesApi.from_conf(
                api_conf, namespace_default=namespace, retry=retry, environ=environ
            )
        except ConfigError as error:
            raise UsageError(str(error)) from None
        endpoint = ApiEndpoint(settings.host, settings.source)
        configuration = settings.configuration
        return Connection(
            api,
            endpoint,
            token=bearer_token(configuration),
            files=client_files(configuration),
            verify_tls=bool(getattr(configuration, "verify_ssl", True)),
        )

    return connect


def bearer_token(configuration: Any) -> str | None:
    """The bearer token an official client configuration sends, without the scheme (a kubeconfig's
    loader stores ``"Bearer TOKEN"`` with no prefix; a token property, ``TOKEN`` with prefix ``Bearer``)."""
    refresh = getattr(configuration, "refresh_api_key_hook", None)
    if refresh is not None:  # a token file: read now
        refresh(configuration)
    value = str((getattr(configuration, "api_key", None) or {}).get("BearerToken") or "")
    prefix = (getattr(configuration, "api_key_prefix", None) or {}).get("BearerToken")
    if not prefix and value[:7].lower() == "bearer ":
        value = value[7:]
    return value.strip() or None


def client_files(configuration: Any) -> dict[str, bytes]:
    """The contents of the CA, client certificate and key files of an official client configuration
    (the client writes a kubeconfig's ``*-data`` into temporary files, deleted when this process ends)."""
    files: dict[str, bytes] = {}
    for suffix, attribute in (
        ("caCertFile", "ssl_ca_cert"),
        ("clientCertFile", "cert_file"),
        ("clientKeyFile", "key_file"),
    ):
        path = getattr(configuration, attribute, None)
        if not path:
            continue
        try:
            with open(path, "rb") as handle:
                files[suffix] = handle.read()
        except OSError as error:  # the client has just read it; say so if it is gone now
            log.debug("cannot read %s %s: %s", attribute, path, error)
    return files


official_connection: Connector = official_connector()
"""The real adapter, configured from the process environment."""


def preflight(connection: Connection, namespace: str | None, needs: Sequence[Permission] = ()) -> None:
    """Fail with a usage error unless the server answers and allows ``needs`` in ``namespace``.

    The read shows connectivity and credentials (and the LIST permission on pods); the access
    reviews show the rest. A server that cannot answer access reviews is trusted: the verbs are then
    checked when they are used.
    """
    try:
        connection.api.list(PODS, namespace, label_selector=role_selector(DRIVER_ROLE, "preflight"))
    except ApiError as error:
        raise explain_api_error(
            error, connection.endpoint, verb="list", resource="pods", namespace=namespace
        ) from None
    for need in needs:
        allowed, reason = access_review(connection.api, need, namespace)
        if allowed is False:
            raise permission_error(need.verb, need.resource.plural, namespace, reason)


def access_review(api: KubernetesApi, need: Permission, namespace: str | None) -> tuple[bool | None, str]:
    """Whether the caller may do ``need`` (None when the server cannot tell), and the server's reason."""
    attributes: dict[str, str] = {"verb": need.verb, "resource": need.resource.plural}
    if need.resource.group:
        attributes["group"] = need.resource.group
    if namespace is not None:
        attributes["namespace"] = namespace
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    try:
        answer = api.create(ACCESS_REVIEWS, None, body)
    except ApiError as error:
        log.debug("access review of %s not available: %s", need, error)
        return None, ""
    status = answer.get("status") or {}
    if "allowed" not in status:
        return None, ""
    if status.get("allowed"):
        return True, ""
    return False, str(status.get("reason") or "")


def describe_failure(
    error: ApiError, connection: Connection, *, verb: str, resource: str, namespace: str | None
) -> str:
    """A one-line explanation of an API failure during the command."""
    return explain_api_error(
        error, connection.endpoint, verb=verb, resource=resource, namespace=namespace
    ).message


LOCAL_VERSION_MARK = "+k8s-backend"  # the embedded API server's /version gitVersion ends so


def is_local_cluster(connection: Connection, loopback_hosts: Sequence[str]) -> bool:
    """Whether ``connection`` reaches a k8s-backend local cluster over https on this machine (asked of
    its ``/version`` only for an https loopback URL; any failure means no)."""
    parts = urlsplit(connection.endpoint.url)
    version = getattr(connection.api, "server_version", None)
    if parts.scheme != "https" or parts.hostname not in loopback_hosts or not callable(version):
        return False
    try:
        return LOCAL_VERSION_MARK in str(version().get("gitVersion", ""))
    except Exception:  # a server that cannot say is a real one here
        return False
