"""Feeds the executor tracker from snapshots and hooks, and acts on what it notices.

The tracker is plain bookkeeping; this component gives it a lock (hooks arrive on driver threads,
batches on a subscriber thread), a subscription, and the one drastic action: failing the application
when an executor image cannot be pulled.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from k8s_backend.common import Clock
from k8s_backend.lifecycle.block_migration import BlockMigration, decommission_outcome
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.report import Move, Timeline, TimelineLog
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import SnapshotsStore
from k8s_backend.tracking.pod_reasons import PendingReason
from k8s_backend.tracking.states import ExecutorState
from k8s_backend.tracking.tracker import ExecutorStuck, ExecutorTracker, ImagePullFailed

log = logging.getLogger(__name__)

NO_MIGRATION = BlockMigration()  # Spark's defaults: spark.storage.decommission.enabled=false


class ExecutorMonitor:
    """Thread-safe facade over :class:`ExecutorTracker`."""

    def __init__(
        self,
        tracker: ExecutorTracker,
        store: SnapshotsStore,
        clock: Clock,
        *,
        interval: float = 1.0,
        on_application_failed: Callable[[str], None] | None = None,
        registered_ids: Callable[[], Iterable[str]] | None = None,
        block_migration: BlockMigration = NO_MIGRATION,
    ) -> None:
        """``registered_ids``: the executor ids the driver has registered (their times go into the
        timeline). ``block_migration``: Spark's ``spark.storage.decommission.*`` settings, which say what a
        finished decommission did with the executor's blocks."""
        self._tracker = tracker
        self._registered_ids = registered_ids
        self._timeline = TimelineLog(started_at=clock.now())
        self._store = store
        self._clock = clock
        self._interval = interval
        self._on_application_failed = on_application_failed
        self._block_migration = block_migration
        self._lock = threading.Lock()
        self._failed = False
        self._told_ended: set[int] = set()
        self._noticed: dict[int, str] = {}  # executors decommissioned on a disruption notice -> why
        self.stuck_notices: list[ExecutorStuck] = []

    def start(self) -> None:
        self._store.add_subscriber(self._interval, self.on_batch)

    def on_batch(self, batch: SnapshotBatch) -> None:
        registered = list(self._registered_ids()) if self._registered_ids is not None else []
        with self._lock:
            now = self._clock.now()
            notices = self._tracker.on_batch(batch, now)
            self._timeline.registered((int(i) for i in registered if str(i).isdigit()), now)
            ended = self._ended(update.executor_id for update in batch.updates)
        _tell_ended(ended)
        for notice in notices:
            if isinstance(notice, ExecutorStuck):
                self.stuck_notices.append(notice)
                del self.stuck_notices[:-100]
            elif isinstance(notice, ImagePullFailed):
                self._image_pull_failed(notice)

    def _image_pull_failed(self, notice: ImagePullFailed) -> None:
        if self._failed or self._on_application_failed is None:
            return
        self._failed = True
        reason = (
            f"Executor image {notice.image or '(unknown)'} cannot be pulled ({notice.reason}) after "
            f"{notice.failing_for:.0f}s and no executor ever started: check "
            "spark.kubernetes.executor.container.image and spark.kubernetes.container.image.pullSecrets "
            "(spark.kubernetes.executor.imagePullFailTimeout=0 disables this check)"
        )
        self._on_application_failed(reason)

    def requested(self, executor_id: int, resource_profile_id: int, reason: str = "") -> None:
        """The allocator created this executor's pod, for ``reason``."""
        with self._lock:
            self._tracker.requested(executor_id, resource_profile_id, self._clock.now(), reason)

    def creation_failed(self, executor_id: int, resource_profile_id: int, detail: str) -> None:
        with self._lock:
            self._tracker.creation_failed(executor_id, resource_profile_id, detail, self._clock.now())

    def killed(self, executor_ids: Iterable[str]) -> None:
        ids = [int(i) for i in executor_ids if str(i).isdigit()]
        with self._lock:
            self._tracker.killed(ids, self._clock.now())
            self._timeline.marker(self._clock.now(), "kill", f"the driver killed executors {_ids(ids)}")

    def decommissioning(self, executor_ids: Iterable[str]) -> None:
        ids = [int(i) for i in executor_ids if str(i).isdigit()]
        with self._lock:
            self._tracker.decommissioning(ids, self._clock.now())
            self._timeline.marker(self._clock.now(), "decommission", f"decommissioning {_ids(ids)}")

    def disruption_noticed(self, executor_id: str, pod_name: str, reason: str) -> None:
        """Kubernetes will take this executor's pod away: a marker, and its end gets one too."""
        if not str(executor_id).isdigit():
            return
        with self._lock:
            self._noticed[int(executor_id)] = reason
            self._timeline.marker(
                self._clock.now(), "notice", f"executor {executor_id} (pod {pod_name}): {reason}"
            )

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        """A ``migrated`` marker when the executor finished its decommission itself (no task left and,
        with block migration on, its blocks migrated); nothing when it was lost first."""
        text = decommission_outcome(str(executor_id), spark_reason, self._block_migration)
        if text is None:
            log.info("Decommissioning executor %s removed before it finished: %s", executor_id, spark_reason)
            return
        log.info("%s", text[0].upper() + text[1:])
        with self._lock:
            self._timeline.marker(self._clock.now(), "migrated", text)

    def target(self, total: int) -> None:
        """The driver asked for ``total`` executors (all profiles)."""
        with self._lock:
            self._timeline.target(self._clock.now(), total)

    def api_error(self, text: str) -> None:
        """An API call failed (a marker on the timeline)."""
        with self._lock:
            self._timeline.marker(self._clock.now(), "api-error", text)

    @property
    def started_at(self) -> float:
        """When the monitor (so the backend) started: where stop()'s timeline starts."""
        return self._timeline.started_at

    def recent_activity(self, count: int) -> tuple[list[tuple[float, int]], list[tuple[float, str, str]]]:
        """The last ``count`` target changes ``(time, total)`` and markers ``(time, kind, text)``."""
        with self._lock:
            target, markers = self._timeline.recent(count)
        return list(target), [(m.time, m.kind, m.text) for m in markers]

    def timeline(self, title: str) -> Timeline:
        """Everything recorded so far, as a :class:`~k8s_backend.report.Timeline`."""
        with self._lock:
            histories = {
                executor_id: [Move(t.time, t.target.value, t.reason) for t in history]
                for executor_id, history in self._tracker.histories().items()
            }
            for executor_id, moves in histories.items():
                record = self._tracker.record(executor_id)
                waiting = record.pending_reason if record is not None else None
                if waiting is not None and moves and moves[-1].state in ("requested", "pending"):
                    # Still waiting: why is known now, not yet in the history (it is kept at the move on).
                    moves[-1] = Move(moves[-1].time, moves[-1].state, moves[-1].reason or str(waiting))
            return self._timeline.build(title, histories, now=self._clock.now())

    def lost(self, executor_id: int, detail: str) -> None:
        with self._lock:
            self._tracker.lost(executor_id, detail, self._clock.now())
            ended = self._ended([executor_id])
        _tell_ended(ended)

    def _ended(self, executor_ids: Iterable[int]) -> list[tuple[int, str]]:
        """Those of ``executor_ids`` that reached a final state and were not told yet, with their history
        line (lock held)."""
        out = []
        for executor_id in executor_ids:
            record = self._tracker.record(executor_id)
            if record is not None and record.state.is_final and executor_id not in self._told_ended:
                self._told_ended.add(executor_id)
                out.append((executor_id, self._tracker.describe(executor_id)))
        if len(self._told_ended) > 4096:  # forget executors the tracker itself no longer keeps
            self._told_ended &= set(self._tracker.histories())
        return out

    def removed(self, executor_id: int, loss: ExecutorLoss) -> None:
        detail = loss.message.strip().splitlines()[0] if loss.message.strip() else ""
        with self._lock:
            self._tracker.removed(executor_id, detail, self._clock.now())
            notice = self._noticed.pop(executor_id, None)
            if notice is not None:
                self._timeline.marker(
                    self._clock.now(),
                    "gone",
                    f"executor {executor_id}, decommissioned on notice ({notice}), is gone: "
                    f"{detail or f'exit {loss.exit_code}'}",
                )
            ended = self._ended([executor_id])
        _tell_ended(ended)

    def stuck_reasons(self, min_wait: float | None = None) -> list[str]:
        with self._lock:
            stuck = self._tracker.stuck(self._clock.now(), min_wait)
        return [f"executor {s['executor_id']}: {s['reason']}" for s in stuck]

    def describe(self, executor_id: int) -> str:
        with self._lock:
            return self._tracker.describe(executor_id)

    def describe_all(self) -> list[str]:
        """Every tracked executor's history on one line each, by executor id: what was created, why,
        and what became of it (to explain a run afterwards)."""
        with self._lock:
            return [self._tracker.describe(i) for i in sorted(self._tracker.histories())]

    def progress(self) -> tuple[dict[ExecutorState, int], list[PendingReason]]:
        """Executors per state and why those not running yet wait (for the progress line)."""
        with self._lock:
            return self._tracker.counts(), self._tracker.waiting_reasons()

    def summary(self) -> dict[str, object]:
        with self._lock:
            return self._tracker.summary(self._clock.now())


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids) or "(none)"


def _tell_ended(ended: Iterable[tuple[int, str]]) -> None:
    # The whole history, once, when an executor ends: the same ISO 8601 line as status() and the CLI's.
    for executor_id, history in ended:
        log.info("Executor %d ended: %s", executor_id, history)
