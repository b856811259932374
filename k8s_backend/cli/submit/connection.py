"""The connection a cluster-mode submission works through: the API server its master names, or, for
``pyk8s://local``, a local cluster this command starts (and stops when the application ends)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from k8s_backend.cli.common.cluster_api import Connection, Connector, submission_api_conf
from k8s_backend.cli.common.deps import LocalClusterFactory
from k8s_backend.cli.common.errors import ApiEndpoint
from k8s_backend.cli.submit.submission import Submission
from k8s_backend.kube.masters import MasterKind


@contextlib.contextmanager
def submission_connection(
    sub: Submission, connect: Connector, local_cluster: LocalClusterFactory | None
) -> Iterator[tuple[Connection, Any]]:
    """The connection, and the local cluster it goes to (None for any other master)."""
    if sub.master_kind is not MasterKind.LOCAL:
        connection = connect(submission_api_conf(sub.properties), sub.namespace)
        try:
            yield connection, None
        finally:
            connection.api.close()
        return
    factory = local_cluster or default_local_cluster
    with factory() as cluster:
        endpoint = ApiEndpoint(cluster.url, "pyk8s://local (a local cluster started by this command)")
        yield Connection(cluster.api(sub.namespace), endpoint), cluster


def default_local_cluster() -> contextlib.AbstractContextManager[Any]:
    """A local cluster with the defaults of ``k8s-backend local``."""
    from k8s_backend.local.cluster import LocalCluster

    return LocalCluster()


def local_image() -> str:
    """The image a local cluster's pods use by default: the installed pyspark's version."""
    from k8s_backend.local.images import default_spark_image

    return default_spark_image()
