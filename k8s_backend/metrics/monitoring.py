"""One backend's metrics, as the composition root wires them: the registry, its HTTP server, the API
decorator, the round timer, the failure counter, and the view of the parts read at scrape time."""

from __future__ import annotations

from k8s_backend.backend.hooks import BackendParts
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import KubernetesApi
from k8s_backend.metrics.api import InstrumentedKubernetesApi
from k8s_backend.metrics.observe import ExecutorFailures, TimedSubscriptions
from k8s_backend.metrics.registry import BackendMetrics, BackendView
from k8s_backend.metrics.server import MetricsServer
from k8s_backend.snapshots.store import SnapshotsStore


class BackendMonitoring:
    """Built only when ``spark.kubernetes.metrics.port`` is set: with it off, nothing is wrapped."""

    def __init__(self, app_id: str, *, host: str, port: int) -> None:
        self.metrics = BackendMetrics(app_id)
        self.server = MetricsServer(self.metrics.registry, host=host, port=port)
        self._parts: BackendParts | None = None
        self.failures = ExecutorFailures(self.metrics, deleted_as_excess=self._deleted_as_excess)

    @classmethod
    def from_conf(cls, conf: KubernetesConf, app_id: str) -> BackendMonitoring | None:
        if conf.metrics_port == 0:
            return None
        return cls(app_id, host=conf.metrics_host, port=conf.metrics_port)

    def instrument(self, api: KubernetesApi) -> KubernetesApi:
        """``api``, with every request counted and timed."""
        return InstrumentedKubernetesApi(api, self.metrics)

    def timed(self, store: SnapshotsStore) -> SnapshotsStore:
        """The store for the allocator: each of its rounds is timed."""
        return TimedSubscriptions(store, self.metrics.allocation_rounds.observe)

    def attach(self, parts: BackendParts, *, has_driver: bool) -> None:
        """Read the executor counts, targets and watch counters from ``parts`` at every scrape."""
        self._parts = parts
        store, allocator = parts.store, parts.allocator
        self.metrics.watch(
            BackendView(
                pod_phases=lambda: [state.phase for state in store.current().pods.values()],
                registered=parts.registered_executors if has_driver else None,
                targets=lambda: allocator.status()["targets"],
                outstanding=lambda: allocator.outstanding_pods,
                watch=parts.watch_source.health,
                polls=lambda: parts.polling_source.polls,
            )
        )

    def _deleted_as_excess(self, executor_id: int) -> bool:
        return self._parts is not None and self._parts.allocator.is_deleted(executor_id)
