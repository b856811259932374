"""The progress line: one concise line per change of the executors, at most one per interval.

    executors: 8 requested, 2 pending (Unschedulable: 0/3 nodes are available: 3 Insufficient memory.),
    6 running, 5 registered

(on one line). It is logged at INFO on the ``k8s_backend.progress`` logger, so a notebook or a service
can route it. Python shows only WARNING and above until logging is configured, so the line is also
written to stderr directly, unless logging delivers it (a handler on the way, at INFO or below, prints
it: that is the one copy) or a level set on ``k8s_backend`` or ``k8s_backend.progress`` turns INFO off
(the application chose silence). Nothing here touches the logging configuration.
``spark.kubernetes.progress.interval=0`` turns the line off.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import TextIO

import attrs

from k8s_backend.common import Clock
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore
from k8s_backend.tracking.pod_reasons import PendingReason
from k8s_backend.tracking.states import ExecutorState

LOGGER_NAME = "k8s_backend.progress"
log = logging.getLogger(LOGGER_NAME)

MAX_REASONS = 2  # distinct reasons shown; more are counted as "+N more"
MAX_REASON_CHARS = 160
_SLACK = 1e-3  # a tick that comes this much early (float sums of clock steps) is on time

_PENDING = (ExecutorState.REQUESTED, ExecutorState.PENDING)
_STOPPING = (ExecutorState.DECOMMISSIONING, ExecutorState.TERMINATING)


@attrs.frozen
class ExecutorProgress:
    """What the line shows: the driver's target, executors by state, and why pending ones wait."""

    requested: int = 0  # the driver's target, over all resource profiles
    pending: int = 0  # asked for, not running yet (pods not created yet included)
    running: int = 0
    registered: int = 0  # registered with the driver (without a driver: running pods)
    stopping: int = 0  # being decommissioned or killed
    reasons: tuple[tuple[str, int], ...] = ()  # (reason, executors), most common first

    @classmethod
    def of(
        cls,
        counts: dict[ExecutorState, int],
        reasons: Iterable[PendingReason],
        *,
        requested: int,
        registered: int,
    ) -> ExecutorProgress:
        running = counts.get(ExecutorState.RUNNING, 0)
        # Pods the allocator is yet to create are pending too (they are asked for, and not running).
        pending = max(sum(counts.get(s, 0) for s in _PENDING), requested - running)
        return cls(
            requested=requested,
            pending=pending,
            running=running,
            registered=registered,
            stopping=sum(counts.get(s, 0) for s in _STOPPING),
            reasons=group_reasons(reasons),
        )

    @property
    def idle(self) -> bool:
        return not (self.requested or self.pending or self.running or self.registered or self.stopping)

    def line(self) -> str:
        """``executors: 8 requested, 2 pending (Unschedulable: ...), 6 running, 5 registered``."""
        pending = f"{self.pending} pending"
        if self.reasons and self.pending:
            pending += f" ({self._reasons_text()})"
        parts = [f"{self.requested} requested", pending, f"{self.running} running"]
        if self.stopping:
            parts.append(f"{self.stopping} stopping")
        parts.append(f"{self.registered} registered")
        return "executors: " + ", ".join(parts)

    def _reasons_text(self) -> str:
        shown = self.reasons[:MAX_REASONS]
        if len(self.reasons) == 1 and shown[0][1] == self.pending:
            return shown[0][0]  # every pending executor waits for the same thing
        text = "; ".join(f"{count} {reason}" for reason, count in shown)
        if len(self.reasons) > MAX_REASONS:
            text += f"; +{len(self.reasons) - MAX_REASONS} more"
        return text


def group_reasons(reasons: Iterable[PendingReason]) -> tuple[tuple[str, int], ...]:
    """Count executors per reason, the steps of one retried image pull being one reason (shown with the
    pull error's message rather than the back-off's), most common first."""
    representatives: list[PendingReason] = []
    counts: list[int] = []
    for reason in reasons:
        for index, representative in enumerate(representatives):
            if reason.same_as(representative):
                if representative.reason == "ImagePullBackOff":
                    representatives[index] = reason
                counts[index] += 1
                break
        else:
            representatives.append(reason)
            counts.append(1)
    order = sorted(range(len(counts)), key=lambda i: -counts[i])  # stable: first seen first among equals
    return tuple((_short(str(representatives[i])), counts[i]) for i in order)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


# -- where the line goes -----------------------------------------------------------------------------


def delivered_by_logging(logger: logging.Logger, level: int = logging.INFO) -> bool:
    """Whether a record of ``level`` on ``logger`` is printed by some handler (not the last resort)."""
    if not logger.isEnabledFor(level):
        return False
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if not isinstance(handler, logging.NullHandler) and level >= handler.level:
                return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def silenced_by_logging(logger: logging.Logger, level: int = logging.INFO) -> bool:
    """Whether the application turned ``level`` off for this logger: a level set on it or on a parent
    below the root (``k8s_backend``), or ``logging.disable``."""
    if logger.manager.disable >= level:
        return True
    current: logging.Logger | None = logger
    while current is not None and current is not logging.root:
        if current.level != logging.NOTSET:
            return current.level > level
        current = current.parent
    return False


def emit(line: str, logger: logging.Logger = log, stream: TextIO | None = None) -> None:
    """Log ``line`` at INFO; also write it to ``stream`` (default: the current stderr) when logging
    would neither print it nor was told to keep it quiet. So it is shown exactly once."""
    logger.info("%s", line)
    if delivered_by_logging(logger) or silenced_by_logging(logger):
        return
    out = stream if stream is not None else sys.stderr
    try:
        out.write(line + "\n")
        out.flush()
    except (OSError, ValueError):  # a closed stderr must not break the backend
        pass


class ProgressReporter:
    """Shows the progress line when it changes, at most once per ``interval`` seconds.

    ``tick()`` samples; a change within ``interval`` of the last line is held, and the next tick after
    the interval shows the state it then finds, so the end of a burst is always shown. It ticks as a
    snapshot subscriber (every ``min(interval, 1s)``, on the backend's scheduler) once started.
    """

    def __init__(
        self,
        sample: Callable[[], ExecutorProgress],
        clock: Clock,
        *,
        interval: float = 1.0,
        write: Callable[[str], None] = emit,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"the progress interval must be positive, got {interval}")
        self._sample = sample
        self._clock = clock
        self.interval = interval
        self._write = write
        self._last_line: str | None = None
        self._last_at: float | None = None

    def start(self, store: SnapshotsStore) -> None:
        store.add_subscriber(min(self.interval, 1.0), self.on_batch)

    def on_batch(self, batch: SnapshotBatch) -> None:
        self.tick()

    def tick(self) -> None:
        now = self._clock.now()
        progress = self._sample()
        line = progress.line()
        if line == self._last_line or (self._last_line is None and progress.idle):
            return
        if self._last_at is not None and now - self._last_at < self.interval - _SLACK:
            return  # held: a later tick shows what is true then
        self._last_line, self._last_at = line, now
        self._write(line)

    @property
    def last_line(self) -> str | None:
        return self._last_line
