"""k8s_backend: Spark executors on Kubernetes, managed from the driver side in Python.

Public names: :class:`KubernetesConf` (``from_spark_conf``), :class:`ConfigError`, and
:class:`KubernetesClusterSchedulerBackend` (``create``). Test doubles live in
:mod:`k8s_backend.testing`; the PySpark integration in :mod:`k8s_backend.spark`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_backend import _moved
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ApplicationFailedError, BackendStateError, ConfigError, K8sBackendError

if TYPE_CHECKING:
    from k8s_backend.assembly.wiring import KubernetesClusterSchedulerBackend

__version__ = "0.1.0"

_moved.install()  # old import paths of moved modules keep working

__all__ = [
    "ApplicationFailedError",
    "BackendStateError",
    "ConfigError",
    "K8sBackendError",
    "KubernetesClusterSchedulerBackend",
    "KubernetesConf",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # The backend pulls in the whole runtime; importing it lazily keeps `import k8s_backend` light. The
    # public class is the composition root's: the hooks plus ``create``.
    if name == "KubernetesClusterSchedulerBackend":
        from k8s_backend.assembly.wiring import KubernetesClusterSchedulerBackend

        return KubernetesClusterSchedulerBackend
    raise AttributeError(f"module 'k8s_backend' has no attribute {name!r}")
