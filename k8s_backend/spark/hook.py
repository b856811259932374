"""Let every way PySpark starts a context take a ``pyk8s://`` master after ``import k8s_backend.spark``.

pyspark starts its JVM through ``launch_gateway`` with the context's properties, and spark-submit
rejects a ``pyk8s://`` master. :func:`install` wraps the ``launch_gateway`` that pyspark's SparkContext
calls: for a ``pyk8s://`` master it launches the JVM the way :func:`k8s_backend.spark.prepare` does;
for every other master it calls pyspark's own function unchanged. It also wraps ``SparkContext.__init__``
so that a master given as its argument is seen before the JVM starts, and reads ``PYSPARK_SUBMIT_ARGS``
(:mod:`k8s_backend.spark.entry_points` says where each entry point puts the master).
:func:`uninstall` restores both.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from k8s_backend.common.signals import exit_on_termination
from k8s_backend.spark.entry_points import (
    SUBMIT_ARGS_ENV,
    given_master,
    master_given,
    submit_args_master,
    submit_args_without_master,
)
from k8s_backend.spark.factory import BackendFactory, local_defaults
from k8s_backend.spark.gateway import install_factory, launch, set_default_master
from k8s_backend.spark.jar import bridge_jar
from k8s_backend.spark.master import MasterKind, is_pyk8s, parse_master

log = logging.getLogger(__name__)

_WRAPPED = "__k8s_backend_wrapped__"


def install() -> None:
    """Wrap pyspark's gateway launch and ``SparkContext.__init__`` (idempotent). Does nothing on a
    pyspark without ``pyspark.core`` (before 4.0), where :func:`k8s_backend.spark.session` explains what
    to install."""
    try:
        context = _context_module()
    except ImportError:
        log.debug("pyspark.core.context not found: the pyk8s:// builder hook is not installed")
        return

    original: Any = context.launch_gateway
    if getattr(original, _WRAPPED, None) is None:

        def launch_gateway(conf: Any = None, popen_kwargs: dict[str, Any] | None = None) -> Any:
            if "PYSPARK_GATEWAY_PORT" in os.environ:  # a JVM spark-submit started already
                return original(conf, popen_kwargs)
            master = given_master() or (conf.get("spark.master") if conf is not None else None)
            if is_pyk8s(master):
                return launch_for_pyk8s(conf, str(master), popen_kwargs)
            if master is None:
                submitted, rest = submit_args_master(os.environ.get(SUBMIT_ARGS_ENV, ""))
                if submitted is not None:
                    with submit_args_without_master(rest):
                        return launch_for_pyk8s(conf, submitted, popen_kwargs, default_master=True)
            return original(conf, popen_kwargs)

        setattr(launch_gateway, _WRAPPED, original)
        launch_gateway.__doc__ = original.__doc__
        context.launch_gateway = launch_gateway

    spark_context = context.SparkContext
    init: Any = spark_context.__init__
    if getattr(init, _WRAPPED, None) is None:

        def __init__(self: Any, master: str | None = None, *args: Any, **kwargs: Any) -> None:
            with master_given(master):
                init(self, master, *args, **kwargs)

        setattr(__init__, _WRAPPED, init)
        __init__.__doc__ = init.__doc__
        spark_context.__init__ = __init__


def uninstall() -> None:
    """Put pyspark's own ``launch_gateway`` and ``SparkContext.__init__`` back."""
    try:
        context = _context_module()
    except ImportError:
        return

    original = getattr(context.launch_gateway, _WRAPPED, None)
    if original is not None:
        context.launch_gateway = original
    init = getattr(context.SparkContext.__init__, _WRAPPED, None)
    if init is not None:
        context.SparkContext.__init__ = init


def is_installed() -> bool:
    try:
        context = _context_module()
    except ImportError:
        return False
    return getattr(context.launch_gateway, _WRAPPED, None) is not None


def _context_module() -> Any:
    """pyspark's SparkContext module, whose global ``launch_gateway`` its ``_ensure_initialized`` calls."""
    return importlib.import_module("pyspark.core.context")


def launch_for_pyk8s(
    conf: Any, master: str, popen_kwargs: dict[str, Any] | None = None, *, default_master: bool = False
) -> Any:
    """Launch the JVM for a context whose ``conf`` (a not yet JVM-backed SparkConf, or None) or argument
    names ``master``. With ``default_master`` the master becomes what a plain ``SparkConf()`` reads, as
    spark-submit's ``--master`` would (for ``PYSPARK_SUBMIT_ARGS``)."""
    defaults: dict[str, str] = {}
    if parse_master(master).kind is MasterKind.LOCAL:
        from k8s_backend.spark.session import default_local_image

        defaults = local_defaults(default_local_image())
        if conf is not None:  # the context reads these from the same conf object once the JVM is up
            for key, value in defaults.items():
                conf.setIfMissing(key, value)
    # Also the JVM's system properties: a context made without a conf (SparkContext(master)) reads them.
    properties = dict(defaults)
    if conf is not None:
        properties.update({str(k): str(v) for k, v in conf.getAll()})
    try:
        gateway = launch(properties, bridge_jar(), popen_kwargs)
    except Exception as error:
        from k8s_backend.spark.session import raise_config_error

        raise_config_error(properties, error)  # our message, naming the key, when that is the cause
        raise
    install_factory(gateway, BackendFactory())
    if default_master:
        set_default_master(gateway, master)
    exit_on_termination()
    log.info("Driver JVM launched with k8s_backend's bridge for %s", master)
    return gateway
