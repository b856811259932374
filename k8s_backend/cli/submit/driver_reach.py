"""How a cluster-mode driver reaches the API server: which master it gets, and, when it reuses the
submission's own loopback server, which of the submission's credential files it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from k8s_backend.kube.masters import IN_CLUSTER_MASTER, pyk8s_url, strip_scheme

if TYPE_CHECKING:
    from k8s_backend.cli.common.cluster_api import Connection
    from k8s_backend.cli.submit.submission import Submission

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def driver_master(
    sub: Submission, api_url: str, local_url: str | None = None, *, local_https: bool = False
) -> str:
    """The master the driver inside the pod uses.

    ``spark.kubernetes.driver.master`` if set; the local cluster's URL for ``pyk8s://local``; the same
    URL when the API server is a plain-http loopback address, or a ``k8s-backend local`` cluster's https
    one (``local_https``; its "pods" run on this machine); else the in-cluster service, as Spark does.
    """
    explicit = sub.properties.get("spark.kubernetes.driver.master")
    if explicit:
        return pyk8s_url(strip_scheme(explicit.strip()))
    if local_url:
        return pyk8s_url(local_url)
    parts = urlsplit(api_url)
    # A loopback server that runs "pods" on this machine: plain http (a real API server never serves it),
    # or a k8s-backend local cluster's https (a kind cluster on 127.0.0.1 must get the in-cluster URL).
    local_server = parts.scheme == "http" or (parts.scheme == "https" and local_https)
    if local_server and parts.hostname in LOOPBACK_HOSTS:
        return pyk8s_url(api_url)
    return IN_CLUSTER_MASTER


def submission_files(connection: Connection, cluster: Any) -> dict[str, bytes]:
    """The CA, client certificate and key the submission's client uses, by property suffix."""
    if cluster is not None:  # the embedded cluster: its CA when it serves https
        ca = getattr(cluster, "ca_cert", None)
        return {"caCertFile": ca.read_bytes()} if ca is not None else {}
    return dict(connection.files)
