"""Spark-on-Kubernetes master URLs: the one place they are parsed and written.

The forms (``k8s://`` is Spark's own scheme and a synonym of ``pyk8s://`` wherever both are allowed):

* ``pyk8s://https://host:port`` or ``pyk8s://http://host:port``: that API server;
* ``pyk8s://host:port``: the same with https implied, as Spark does for ``k8s://host:port``;
* ``pyk8s://``: the kubeconfig's current context, or the pod's service account inside a cluster;
* ``pyk8s://local``: an embedded local cluster, started and stopped with the application.

:func:`parse_master` turns one into a :class:`Master` or raises :class:`ConfigError` naming the key,
the value and the accepted forms; the other functions are the formatting the command line needs.
This module sits at the bottom of the layering (``k8s_backend.conf`` uses it): it imports nothing from
k8s_backend but :mod:`k8s_backend.errors`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from urllib.parse import urlsplit

import attrs

from k8s_backend.errors import ConfigError

PYK8S = "pyk8s://"
K8S = "k8s://"
SCHEMES = (PYK8S, K8S)
LOCAL = "local"
MASTER_KEY = "spark.master"
# What a driver inside a cluster uses by default (Spark's spark.kubernetes.driver.master).
IN_CLUSTER_MASTER = PYK8S + "https://kubernetes.default.svc"
_WEB_SCHEMES = ("http", "https")


class MasterKind(enum.Enum):
    """Which Kubernetes API server a master names."""

    API_SERVER = "api-server"  # a URL
    DEFAULT = "default"  # the kubeconfig's or, inside a pod, the service account's
    LOCAL = "local"  # an embedded local cluster


@attrs.frozen
class Master:
    """A parsed master URL."""

    url: str  # as given, without surrounding whitespace
    kind: MasterKind
    api_server: str = ""  # API_SERVER only: scheme://host[:port][/path], no trailing "/"

    @property
    def api_url(self) -> str:
        """What :attr:`k8s_backend.conf.ApiClientConf.master` holds: the API server URL, ``"local"``
        for an embedded local cluster, ``""`` for the kubeconfig or in-cluster default."""
        if self.kind is MasterKind.API_SERVER:
            return self.api_server
        return LOCAL if self.kind is MasterKind.LOCAL else ""

    def backend_master(self, local_api_server: str = "") -> str | None:
        """The ``spark.master`` the Python backend reads (``k8s://`` + API server), or None for the
        kubeconfig/in-cluster default; a local cluster's is ``local_api_server`` (None before it runs)."""
        if self.kind is MasterKind.API_SERVER:
            return K8S + self.api_server
        if self.kind is MasterKind.LOCAL and local_api_server:
            return K8S + local_api_server
        return None


def parse_master(
    text: str,
    *,
    key: str = MASTER_KEY,
    schemes: Sequence[str] = SCHEMES,
    scheme_required: bool = True,
) -> Master:
    """Parse a master URL; :class:`ConfigError` names ``key``, the value and the accepted forms.

    ``schemes`` are the prefixes accepted (``(PYK8S,)`` where Spark's own ``k8s://`` is not ours to
    take); with ``scheme_required=False`` a bare API server URL is accepted too (as in
    ``spark.kubernetes.driver.master``).
    """
    url = text.strip()
    rest = strip_scheme(url, schemes)
    if rest == url and scheme_required:
        raise _bad(text, key, schemes, f"it does not start with {' or '.join(schemes)}")
    if rest.rstrip("/") == "":
        return Master(url=url, kind=MasterKind.DEFAULT)
    if rest.rstrip("/") == LOCAL:
        return Master(url=url, kind=MasterKind.LOCAL)
    # Slashes are stripped after parsing: "https://" must stay a URL without a host, not a host "https".
    server = rest if "://" in rest else "https://" + rest
    try:
        parts = urlsplit(server)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError as error:
        raise _bad(text, key, schemes, str(error)) from error
    if parts.scheme not in _WEB_SCHEMES:
        raise _bad(text, key, schemes, f"the API server's scheme is {parts.scheme!r}, not http or https")
    if not parts.hostname:
        raise _bad(text, key, schemes, "the API server URL has no host")
    return Master(url=url, kind=MasterKind.API_SERVER, api_server=server.rstrip("/"))


def is_pyk8s(master: str | None) -> bool:
    """Whether ``master`` is a ``pyk8s://`` URL (one k8s_backend's own Spark cluster manager takes)."""
    return bool(master) and str(master).strip().startswith(PYK8S)


def is_kubernetes(master: str | None) -> bool:
    """Whether ``master`` is a ``pyk8s://`` or ``k8s://`` URL (other masters: local[*], spark://...)."""
    return bool(master) and str(master).strip().startswith(SCHEMES)


def strip_scheme(master: str, schemes: Sequence[str] = SCHEMES) -> str:
    """``master`` without its ``pyk8s://`` or ``k8s://`` prefix (unchanged if it has neither)."""
    for scheme in schemes:
        if master.startswith(scheme):
            return master[len(scheme) :]
    return master


def normalize(master: str | None) -> str:
    """The ``pyk8s://`` spelling of a Kubernetes master: ``k8s://`` becomes ``pyk8s://``, none or blank
    is ``pyk8s://`` (the kubeconfig or in-cluster default). The rest is left for :func:`parse_master`
    to check; a master of another kind is a :class:`ConfigError`."""
    if master is None or not master.strip():
        return PYK8S
    text = master.strip()
    if not is_kubernetes(text):
        raise _bad(master, MASTER_KEY, SCHEMES, "k8s_backend runs applications on Kubernetes")
    return pyk8s_url(strip_scheme(text))


def pyk8s_url(api_url: str) -> str:
    """The ``pyk8s://`` master of an API server URL (``""``: the default, ``"local"``: a local cluster)."""
    return PYK8S + api_url


def api_url_kind(api_url: str) -> MasterKind:
    """The kind of master an :attr:`Master.api_url` value (e.g. ``ApiClientConf.master``) stands for."""
    if api_url == LOCAL:
        return MasterKind.LOCAL
    return MasterKind.API_SERVER if api_url else MasterKind.DEFAULT


def accepted_forms(schemes: Sequence[str] = SCHEMES) -> str:
    """The accepted forms, for messages."""
    synonym = f" (or {K8S}https://HOST:PORT)" if K8S in schemes else ""
    return (
        f"{PYK8S}https://HOST:PORT{synonym} for an API server, {PYK8S} for the kubeconfig or in-cluster "
        f"configuration, or {PYK8S}{LOCAL} for an embedded local cluster"
    )


def _bad(raw: str, key: str, schemes: Sequence[str], why: str) -> ConfigError:
    return ConfigError(
        f"{key}={raw.strip()} is not a Kubernetes API server URL: use {accepted_forms(schemes)} ({why})",
        key=key,
        value=raw,
    )
