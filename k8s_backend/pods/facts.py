"""Facts about the driver process that shape executor pods but are not Spark properties."""

from __future__ import annotations

import getpass
import importlib.metadata
import logging
import os
from collections.abc import Mapping

import attrs

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.pods.config_map import default_conf_dir

log = logging.getLogger(__name__)

UNKNOWN_SPARK_VERSION = "unknown"


def current_user_name(environ: Mapping[str, str] | None = None) -> str:
    """Spark's getCurrentUserName: ``$SPARK_USER``, else the OS user."""
    env = os.environ if environ is None else environ
    user = env.get("SPARK_USER")
    if user:
        return user
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for the uid (common in containers)
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


def installed_spark_version() -> str:
    """The installed pyspark version, read from package metadata (pyspark itself is not imported)."""
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_SPARK_VERSION


@attrs.frozen
class DriverFacts:
    """What the builder needs from the driver's environment.

    ``auth_secret`` is the RPC secret executors must present when ``spark.authenticate`` is on and no
    secret file is configured (the PySpark integration passes the one the driver JVM uses); without it,
    ``spark.authenticate.secret`` is used.
    """

    spark_user: str
    spark_version: str = UNKNOWN_SPARK_VERSION
    conf_dir: str | None = None
    auth_secret: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def detect(cls, conf: KubernetesConf, *, auth_secret: str | None = None) -> DriverFacts:
        """Read the facts from this process: environment, installed pyspark, conf dir."""
        return cls(
            spark_user=current_user_name(),
            spark_version=installed_spark_version(),
            conf_dir=default_conf_dir(conf),
            auth_secret=auth_secret,
        )
