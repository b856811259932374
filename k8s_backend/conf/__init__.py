"""Configuration: Spark properties in, typed frozen objects out.

The layering inside this package has no cycle: :mod:`~k8s_backend.conf.model` is pure data (attrs
classes and constants), :mod:`~k8s_backend.conf.parse` (with ``parse_pod`` and ``parse_volumes``) reads
properties into that data, and this package module, above both, is where the two meet: it defines
:meth:`KubernetesConf.from_spark_conf` on the model's class.

Why here and not in ``model.py``: the parser builds model objects, so a method in the model calling the
parser would make the model depend on the parser (a cycle, even as a lazy import). Why not a subclass:
``KubernetesConf`` is imported from ``k8s_backend.conf.model`` all over the code base, and those
callers and ``k8s_backend.KubernetesConf`` must be one class. Python runs this ``__init__`` before any
``k8s_backend.conf.*`` submodule is handed to an importer, so the method is in place for every user of
the class; ``model.py`` declares its signature for type checkers and readers.
"""

from k8s_backend.conf.model import (
    AllocationConf,
    ApiClientConf,
    DriverConf,
    ExecutorPodConf,
    KubernetesConf,
    LifecycleConf,
    ResourceProfile,
    ResourceRequest,
    ScalingConf,
    SnapshotsConf,
    VolumeSpec,
)
from k8s_backend.conf.parse import parse_spark_conf
from k8s_backend.errors import ConfigError

__all__ = [
    "AllocationConf",
    "ApiClientConf",
    "ConfigError",
    "DriverConf",
    "ExecutorPodConf",
    "KubernetesConf",
    "LifecycleConf",
    "ResourceProfile",
    "ResourceRequest",
    "ScalingConf",
    "SnapshotsConf",
    "VolumeSpec",
]


def _from_spark_conf(cls: type[KubernetesConf], conf: object) -> KubernetesConf:
    """Read and check Spark properties (a mapping or a ``pyspark.SparkConf``).

    Raises :class:`k8s_backend.ConfigError` naming the key, the bad value and what is accepted.
    """
    return parse_spark_conf(conf)


# Named as the method it becomes, for tracebacks, help() and the docs.
_from_spark_conf.__name__ = "from_spark_conf"
_from_spark_conf.__qualname__ = "KubernetesConf.from_spark_conf"
# Done once, at import, before any caller can reach the class. setattr, not an assignment: the
# signature mypy checks callers against is the declaration in model.py.
setattr(KubernetesConf, "from_spark_conf", classmethod(_from_spark_conf))  # noqa: B010
