"""What the subcommands use from the outside world, injectable so tests run them without a cluster."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from importlib import metadata

import attrs

from k8s_backend.cli.cluster_api import Connector, official_connection
from k8s_backend.cli.console import Console
from k8s_backend.cli.submit_client import DriverRuntime
from k8s_backend.cli.submit_connection import LocalClusterFactory


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
