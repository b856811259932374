"""Where a ``pyk8s://`` master comes from, for each way PySpark starts its driver JVM.

pyspark launches the JVM (``launch_gateway(conf)``) before it reads the context's master, and spark-submit
rejects a master it does not know. So the gateway hook (:mod:`k8s_backend.spark.hook`) must find a
``pyk8s://`` master before pyspark would hand it to spark-submit, wherever the user put it:

* ``SparkContext("pyk8s://local", "app")`` or ``SparkContext(master=...)``: not in the conf yet; the
  hook's wrapper of ``SparkContext.__init__`` holds it for this thread (:func:`master_given`);
* ``SparkConf().setMaster(...)``, ``builder.master(...)``, ``builder.config("spark.master", ...)``: the
  conf's ``spark.master``;
* ``PYSPARK_SUBMIT_ARGS="--master pyk8s://local pyspark-shell"`` (also what ``pyspark --master ...``
  sets for its shell): taken out of the arguments (:func:`submit_args_master`) and made the JVM's default
  master, as spark-submit would have.

``spark-submit --master pyk8s://... app.py`` cannot work: spark-submit's JVM rejects the master before
any Python runs. ``k8s-backend submit --master pyk8s://... app.py`` is the command that does.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
from collections.abc import Iterator
from typing import Any

from k8s_backend.common.environment import variable_set
from k8s_backend.spark.master import is_pyk8s

SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"
SPARK_SUBMIT_HINT = (
    "pyspark's spark-submit rejects a pyk8s:// master before any Python runs; use "
    "`k8s-backend submit --master pyk8s://... app.py` instead"
)

_given = threading.local()


@contextlib.contextmanager
def master_given(master: Any) -> Iterator[None]:
    """While a SparkContext is constructed in this thread with ``master`` as its argument."""
    previous = getattr(_given, "master", None)
    _given.master = master if isinstance(master, str) else None
    try:
        yield
    finally:
        _given.master = previous


def given_master() -> str | None:
    """The master argument of the SparkContext this thread is constructing, if any."""
    master = getattr(_given, "master", None)
    return master if isinstance(master, str) and master else None


def submit_args_master(submit_args: str) -> tuple[str | None, str]:
    """The master in ``PYSPARK_SUBMIT_ARGS`` (``--master X``, ``--master=X`` or ``--conf spark.master=X``)
    if it is a ``pyk8s://`` one, and the arguments without it; other arguments are returned as they are.
    """
    try:
        words = shlex.split(submit_args)
    except ValueError:
        return None, submit_args  # pyspark's own launch reports the malformed value
    master: str | None = None
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        value: str | None = None
        width = 1
        if word == "--master" and index + 1 < len(words):
            value, width = words[index + 1], 2
        elif word.startswith("--master="):
            value = word.split("=", 1)[1]
        elif word == "--conf" and index + 1 < len(words) and words[index + 1].startswith("spark.master="):
            value, width = words[index + 1].split("=", 1)[1], 2
        if value is not None and is_pyk8s(value):
            master = value
        else:
            kept.extend(words[index : index + width])
        index += width
    if master is None:
        return None, submit_args
    return master, shlex.join(kept)


@contextlib.contextmanager
def submit_args_without_master(rest: str) -> Iterator[None]:
    """``PYSPARK_SUBMIT_ARGS`` is ``rest`` while the JVM starts; spark-submit must not see the master."""
    with variable_set(SUBMIT_ARGS_ENV, lambda _: rest or "pyspark-shell"):
        yield
