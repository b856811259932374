"""The allocator's pod deletions: every executor pod, the timed-out requests, the excess pending pods, and a
pod created while stopping. Each is one guarded collection delete: a refusal is logged, never raised."""

from __future__ import annotations

from collections.abc import Collection

from k8s_backend.allocation.creator import guarded
from k8s_backend.kube.labels import executor_selector
from k8s_backend.kube.port import PODS, KubernetesApi


class PodDeletes:
    """Deletes executor pods of one application by label."""

    def __init__(self, api: KubernetesApi, namespace: str, app_id: str) -> None:
        self._api = api
        self._namespace = namespace
        self._app_id = app_id

    def _delete(self, what: str, executor_ids: Collection[int] | None, field_selector: str = "") -> bool:
        selector = executor_selector(self._app_id, executor_ids=executor_ids)
        return guarded(
            what,
            lambda: self._api.delete_collection(
                PODS, self._namespace, label_selector=selector, field_selector=field_selector
            ),
        )

    def all(self) -> bool:
        """Every executor pod of the application (Spark's stop(appId))."""
        return self._delete("delete the executor pods", None)

    def timed_out(self, executor_ids: Collection[int]) -> bool:
        return self._delete("delete timed-out executor pods", executor_ids)

    def excess(self, executor_ids: Collection[int]) -> bool:
        """Only pods still Pending: one that started running meanwhile is kept."""
        return self._delete("delete excess executor pods", executor_ids, "status.phase=Pending")

    def take_back(self, executor_id: int) -> bool:
        """A pod whose create finished after stop() began: its delete may already be done."""
        return self._delete(f"delete executor {executor_id}, created while stopping", [executor_id])
