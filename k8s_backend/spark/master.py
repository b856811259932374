"""``pyk8s://`` master URLs: which Kubernetes API server a PySpark driver's executors go to.

* ``pyk8s://https://host:port`` (or ``pyk8s://host:port``, https assumed): that API server;
* ``pyk8s://``: the kubeconfig's current context, or the pod's service account inside a cluster;
* ``pyk8s://local``: an embedded :class:`k8s_backend.testing.LocalCluster`, started and stopped with
  the session (executors run as local processes).
"""

from __future__ import annotations

import enum
from urllib.parse import urlsplit

import attrs

from k8s_backend.errors import ConfigError

PREFIX = "pyk8s://"
LOCAL = "local"


class MasterKind(enum.Enum):
    API_SERVER = "api-server"
    DEFAULT = "default"
    LOCAL = "local"


@attrs.frozen
class PyK8sMaster:
    """A parsed ``pyk8s://`` master URL."""

    url: str
    kind: MasterKind
    api_server: str = ""  # only for API_SERVER

    def backend_master(self, local_api_server: str = "") -> str | None:
        """The ``spark.master`` the Python backend reads (``k8s://`` + API server), or None for the
        kubeconfig/in-cluster default."""
        if self.kind is MasterKind.API_SERVER:
            return "k8s://" + self.api_server
        if self.kind is MasterKind.LOCAL:
            return "k8s://" + local_api_server if local_api_server else None
        return None


def is_pyk8s(master: str | None) -> bool:
    return bool(master) and str(master).strip().startswith(PREFIX)


def parse_master(master: str) -> PyK8sMaster:
    """Parse a ``pyk8s://`` URL; raises :class:`ConfigError` naming the value and the accepted forms."""
    url = master.strip()
    if not url.startswith(PREFIX):
        raise _bad(master, "it does not start with pyk8s://")
    rest = url[len(PREFIX) :].rstrip("/")
    if rest == "":
        return PyK8sMaster(url=url, kind=MasterKind.DEFAULT)
    if rest == LOCAL:
        return PyK8sMaster(url=url, kind=MasterKind.LOCAL)
    server = rest if "://" in rest else "https://" + rest
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad(master, f"{rest!r} is not an http(s) API server URL")
    try:
        parts.port  # noqa: B018 -- validates the port
    except ValueError as error:
        raise _bad(master, str(error)) from error
    return PyK8sMaster(url=url, kind=MasterKind.API_SERVER, api_server=server)


def _bad(master: str, why: str) -> ConfigError:
    return ConfigError(
        f"spark.master={master!r} is not a k8s_backend master ({why}); use pyk8s://https://HOST:PORT "
        "(an API server), pyk8s:// (kubeconfig or in-cluster) or pyk8s://local (an embedded local cluster)",
        key="spark.master",
        value=master,
    )
