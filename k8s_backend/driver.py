"""The driver-side endpoint the backend reports to (the PySpark bridge implements it, or nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs


@attrs.frozen
class ExecutorLoss:
    """Why an executor is gone, as Spark's ExecutorExited / ExecutorKilled carry it."""

    exit_code: int
    exit_caused_by_app: bool
    message: str
    killed_by_driver: bool = False


class DriverEndpoint(Protocol):
    """What the backend needs from the driver; the core never imports pyspark."""

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        """Tell the driver an executor is lost (asynchronous on the driver side)."""
        ...

    def disable_executor(self, executor_id: str) -> None:
        """Stop scheduling tasks on an executor without removing it yet."""
        ...

    def registered_executors(self) -> Mapping[str, float]:
        """Executor id -> registration time (epoch seconds) of the executors the driver knows."""
        ...
