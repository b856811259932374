"""What the subcommands use from the outside world, injectable so tests run them without a cluster."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, Protocol

import attrs

from k8s_backend.cli.common.cluster_api import Connector, official_connection
from k8s_backend.cli.common.console import Console


class DriverRuntime(Protocol):
    """Readies this process's Spark driver for a ``pyk8s://`` master, and stops what is left running."""

    def prepare(self, master: str, properties: Mapping[str, str]) -> None: ...

    def failure(self) -> str | None:
        """Why k8s_backend failed the application, if it did (the script then fails with a Java error
        that says less)."""
        ...

    def stop(self) -> None: ...


# Starts the local cluster a pyk8s://local submission runs on (a context manager).
LocalClusterFactory = Callable[[], contextlib.AbstractContextManager[Any]]


@attrs.frozen
class Dependencies:
    """Streams, environment, API connector, driver runtime, local cluster factory, time, verbosity."""

    console: Console = attrs.field(factory=Console)
    environ: Mapping[str, str] = attrs.field(factory=lambda: dict(os.environ))
    connect: Connector = official_connection
    runtime: DriverRuntime | None = None  # None: pyspark through k8s_backend.spark
    local_cluster: LocalClusterFactory | None = None  # None: k8s_backend.testing.LocalCluster
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    verbosity: int = 0  # -v/--verbose (a submit's: before its application file): tracebacks are shown


def version() -> str:
    """The installed k8s_backend version."""
    try:
        return metadata.version("k8s_backend")
    except metadata.PackageNotFoundError:
        return "unknown"
