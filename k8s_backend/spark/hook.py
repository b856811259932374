"""Let ``SparkSession.builder.master("pyk8s://...").getOrCreate()`` work after ``import k8s_backend.spark``.

pyspark starts its JVM through ``launch_gateway`` with the context's properties, and spark-submit
rejects a ``pyk8s://`` master. :func:`install` wraps the ``launch_gateway`` that pyspark's SparkContext
calls: for a ``pyk8s://`` master it launches the JVM the way :func:`k8s_backend.spark.prepare` does;
for every other master it calls pyspark's own function unchanged. :func:`uninstall` restores it.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from k8s_backend.common.signals import exit_on_termination
from k8s_backend.spark.factory import BackendFactory, local_defaults
from k8s_backend.spark.gateway import install_factory, launch
from k8s_backend.spark.jar import bridge_jar
from k8s_backend.spark.master import MasterKind, is_pyk8s, parse_master

log = logging.getLogger(__name__)

_WRAPPED = "__k8s_backend_wrapped__"


def install() -> None:
    """Wrap pyspark's gateway launch (idempotent). Does nothing on a pyspark without ``pyspark.core``
    (before 4.0), where :func:`k8s_backend.spark.session` explains what to install."""
    try:
        context = _context_module()
    except ImportError:
        log.debug("pyspark.core.context not found: the pyk8s:// builder hook is not installed")
        return

    original: Any = context.launch_gateway
    if getattr(original, _WRAPPED, None) is not None:
        return

    def launch_gateway(conf: Any = None, popen_kwargs: dict[str, Any] | None = None) -> Any:
        master = conf.get("spark.master") if conf is not None else None
        if not is_pyk8s(master) or "PYSPARK_GATEWAY_PORT" in os.environ:
            return original(conf, popen_kwargs)
        return launch_for_pyk8s(conf, str(master), popen_kwargs)

    setattr(launch_gateway, _WRAPPED, original)
    launch_gateway.__doc__ = original.__doc__
    context.launch_gateway = launch_gateway


def uninstall() -> None:
    """Put pyspark's own ``launch_gateway`` back."""
    try:
        context = _context_module()
    except ImportError:
        return

    original = getattr(context.launch_gateway, _WRAPPED, None)
    if original is not None:
        context.launch_gateway = original


def is_installed() -> bool:
    try:
        context = _context_module()
    except ImportError:
        return False
    return getattr(context.launch_gateway, _WRAPPED, None) is not None


def _context_module() -> Any:
    """pyspark's SparkContext module, whose global ``launch_gateway`` its ``_ensure_initialized`` calls."""
    return importlib.import_module("pyspark.core.context")


def launch_for_pyk8s(conf: Any, master: str, popen_kwargs: dict[str, Any] | None = None) -> Any:
    """Launch the JVM for a context whose ``conf`` (a not yet JVM-backed SparkConf) names ``master``."""
    if parse_master(master).kind is MasterKind.LOCAL:
        from k8s_backend.spark.session import default_local_image

        # The context reads these from the same conf object once the JVM is up.
        for key, value in local_defaults(default_local_image()).items():
            conf.setIfMissing(key, value)
    properties = {str(k): str(v) for k, v in conf.getAll()}
    try:
        gateway = launch(properties, bridge_jar(), popen_kwargs)
    except Exception as error:
        from k8s_backend.spark.session import raise_config_error

        raise_config_error(properties, error)  # our message, naming the key, when that is the cause
        raise
    install_factory(gateway, BackendFactory())
    exit_on_termination()
    log.info("Driver JVM launched with k8s_backend's bridge for %s", master)
    return gateway
