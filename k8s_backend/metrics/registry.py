"""One backend's Prometheus metrics: its own registry, the instruments fed by events, and a collector
that reads the current state (executor counts, targets, watch counters) from the parts at scrape time.

Nothing here is global: each backend builds a :class:`BackendMetrics` with its own
``CollectorRegistry``, so several backends in one process never share a series. The registry belongs to
one application, so the series carry no ``app_id`` label; ``k8s_backend_info{app_id=...}`` names it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping

import attrs
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from k8s_backend.snapshots.states import PodPhase

PREFIX = "k8s_backend"

API_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ROUND_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


_WATCH_COUNTERS = (
    ("restarts", "Executor pod watch streams that ended and were opened again (410 Gone, errors, timeouts)"),
    ("relists", "Lists made by the executor pod watch, streaming lists where the server offers them (the "
                "first one, then one after each 410 Gone)"),
)


def _zero() -> int:
    return 0


def _no_targets() -> Mapping[int, int]:
    return {}


def _no_watch() -> Mapping[str, object]:
    return {}


@attrs.frozen
class BackendView:
    """What the collector reads at scrape time; each callable is cheap and thread-safe."""

    pod_phases: Callable[[], Iterable[PodPhase]] = tuple  # the phase of every pod in the current snapshot
    registered: Callable[[], int] | None = None  # executors registered with the driver (None: no driver)
    targets: Callable[[], Mapping[int, int]] = _no_targets  # resource profile id -> executor target
    outstanding: Callable[[], int] = _zero  # pods requested and not yet running
    watch: Callable[[], Mapping[str, object]] = _no_watch  # the watch source's health()
    polls: Callable[[], int] = _zero  # full lists the polling source made


class _StateCollector(Collector):
    """Reads the backend's state when scraped (no bookkeeping of its own, so it cannot drift)."""

    def __init__(self, app_id: str) -> None:
        self._app_id = app_id
        self._lock = threading.Lock()
        self._view = BackendView()

    def watch(self, view: BackendView) -> None:
        with self._lock:
            self._view = view

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            view = self._view
        info = GaugeMetricFamily(f"{PREFIX}_info", "The application this backend manages", labels=["app_id"])
        info.add_metric([self._app_id], 1)
        yield info
        executors = GaugeMetricFamily(
            f"{PREFIX}_executors",
            "Executor pods by state (as status() counts them), plus executors registered with the driver",
            labels=["state"],
        )
        counts = {phase.value: 0 for phase in PodPhase}
        for phase in view.pod_phases():
            counts[phase.value] += 1
        for state, count in counts.items():
            executors.add_metric([state], count)
        if view.registered is not None:
            executors.add_metric(["registered"], view.registered())
        yield executors
        target = GaugeMetricFamily(
            f"{PREFIX}_executor_target", "Executors wanted, per resource profile id", labels=["profile"]
        )
        for profile, total in sorted(view.targets().items()):
            target.add_metric([str(profile)], total)
        yield target
        outstanding = "Executor pods requested and not yet running"
        yield GaugeMetricFamily(f"{PREFIX}_outstanding_pods", outstanding, value=view.outstanding())
        health = view.watch()
        for name, what in _WATCH_COUNTERS:
            value = health.get(name, 0)
            yield CounterMetricFamily(
                f"{PREFIX}_watch_{name}", what, value=float(value) if isinstance(value, int | float) else 0.0
            )
        polls = "Full lists made by the polling source (streaming lists where the server offers them)"
        yield CounterMetricFamily(f"{PREFIX}_polls", polls, value=view.polls())


class BackendMetrics:
    """The metrics of one backend, in a registry of their own."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self.registry = CollectorRegistry(auto_describe=True)
        self._state = _StateCollector(app_id)
        self.registry.register(self._state)
        self.executor_failures = Counter(
            f"{PREFIX}_executor_failures",
            "Executors lost for a reason of their own (not killed or scaled down by the driver or backend)",
            ["reason"],
            registry=self.registry,
        )
        self.pod_creations = Counter(
            f"{PREFIX}_pod_creations",
            "Executor pod creates, by result",
            ["result"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            f"{PREFIX}_api_requests",
            "Kubernetes API requests, by verb, resource and HTTP status (0: no answer)",
            ["verb", "resource", "code"],
            registry=self.registry,
        )
        self.api_latency = Histogram(
            f"{PREFIX}_api_request_duration_seconds",
            "Kubernetes API request latency (for a watch: until the stream is open)",
            ["verb", "resource"],
            buckets=API_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.allocation_rounds = Histogram(
            f"{PREFIX}_allocation_round_duration_seconds",
            "How long an allocation round takes, its API calls included",
            buckets=ROUND_BUCKETS,
            registry=self.registry,
        )

    def watch(self, view: BackendView) -> None:
        """Read the backend's state from ``view`` at every scrape."""
        self._state.watch(view)
