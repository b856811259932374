"""``pyk8s://`` master URLs: which Kubernetes API server a PySpark driver's executors go to.

* ``pyk8s://https://host:port`` (or ``pyk8s://host:port``, https assumed): that API server;
* ``pyk8s://``: the kubeconfig's current context, or the pod's service account inside a cluster;
* ``pyk8s://local``: an embedded :class:`k8s_backend.local.LocalCluster`, started and stopped with
  the session (executors run as local processes).

The parsing is :mod:`k8s_backend.kube.masters`'; this module only says that a PySpark session takes
``pyk8s://`` masters alone (``k8s://`` is Spark's own cluster manager, not ours to take over).
"""

from __future__ import annotations

from k8s_backend.kube import masters
from k8s_backend.kube.masters import LOCAL, MasterKind, is_pyk8s
from k8s_backend.kube.masters import PYK8S as PREFIX
from k8s_backend.kube.masters import Master as PyK8sMaster

__all__ = ["LOCAL", "PREFIX", "MasterKind", "PyK8sMaster", "is_pyk8s", "parse_master"]


def parse_master(master: str) -> PyK8sMaster:
    """Parse a ``pyk8s://`` URL; raises :class:`ConfigError` naming the value and the accepted forms."""
    return masters.parse_master(master, schemes=(PREFIX,))
