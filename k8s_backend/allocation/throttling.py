"""The first 429 answered to executor pod creates, told once: who throttled the driver, and what follows.

A 429 is not an executor failure: the allocator asks again later, no sooner than the ``Retry-After``,
and adaptive batches shrink (see :mod:`k8s_backend.allocation.adaptive`). Every 429 is counted
(``status()['allocator']['batches']['throttled']`` and the ``k8s_backend_api_requests_total`` metric
with ``code="429"``), but logged once per run: a busy API server can refuse hundreds of creates, and a
line each would bury the one useful fact, which API Priority and Fairness class refused them. The
server names it by UID (:mod:`k8s_backend.kube.flow_control`); names are looked up once, with a single
list of the cluster's FlowSchemas and PriorityLevelConfigurations, and the UIDs stand in for them when
the driver may not read those (examples/kubernetes/driver-rbac.yaml does not grant it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from k8s_backend.allocation.create_batch import CreateResult
from k8s_backend.kube.port import ApiError, KubernetesApi, Resource
from k8s_backend.kube.retry import caller_retries

log = logging.getLogger(__name__)

FLOW_SCHEMAS = Resource("FlowSchema", "flowschemas", group="flowcontrol.apiserver.k8s.io", namespaced=False)
PRIORITY_LEVELS = Resource(
    "PriorityLevelConfiguration",
    "prioritylevelconfigurations",
    group="flowcontrol.apiserver.k8s.io",
    namespaced=False,
)


class ThrottleNotice:
    """Logs the first 429 of a run at WARNING (once), and keeps who sent it for ``status()``."""

    def __init__(self, api: KubernetesApi) -> None:
        self._api = api
        self._lock = threading.Lock()
        self._noticed = False
        self._status: dict[str, Any] | None = None

    def observe(self, results: Sequence[CreateResult]) -> None:
        """Look at one round's create results; the first 429 ever seen is told (once)."""
        throttled = [r.creation for r in results if not r.creation.created and r.creation.status == 429]
        if not throttled:
            return
        with self._lock:
            if self._noticed:
                return
            self._noticed = True
        flow = next((c.flow_control for c in throttled if c.flow_control is not None), None)
        waits = [c.retry_after for c in throttled if c.retry_after is not None]
        wait = f"Retry-After {max(waits):g} s" if waits else "no Retry-After"
        if flow is None:
            status: dict[str, Any] = {"flow_schema": None, "priority_level": None}
            log.warning(
                "The API server answers 429 Too Many Requests to executor pod creates (%s), without naming "
                "an API Priority and Fairness class (a proxy or an admission webhook may be the limit). "
                "Allocation asks again after the wait, with fewer creates in flight when batches are "
                "adaptive; status()['allocator']['batches']['throttled'] counts these answers.",
                wait,
            )
        else:
            names = self._names()
            schema, level = flow.flow_schema_uid, flow.priority_level_uid
            status = {
                "flow_schema": {"uid": schema, "name": names.get(schema)},
                "priority_level": {"uid": level, "name": names.get(level)},
            }
            log.warning(
                "API Priority and Fairness throttles this driver: the API server answers 429 Too Many "
                "Requests to executor pod creates (%s) in FlowSchema %s, PriorityLevelConfiguration %s. "
                "Allocation asks again after the wait, with fewer creates in flight when batches are "
                "adaptive; status()['allocator']['batches']['throttled'] counts these answers. If it "
                "slows the application down, give the driver's service account a priority level with "
                "more concurrency (kubectl get flowschemas,prioritylevelconfigurations).",
                wait,
                _named(status["flow_schema"]),
                _named(status["priority_level"]),
            )
        with self._lock:
            self._status = status

    def status(self) -> dict[str, Any] | None:
        """The FlowSchema and priority level of the first 429 (``{"uid", "name"}`` each, the name None when
        unreadable; both None when the server named no APF class); None before any 429."""
        with self._lock:
            return None if self._status is None else dict(self._status)

    def _names(self) -> dict[str, str]:
        """The names of the cluster's FlowSchemas and priority levels by UID; empty when unreadable."""
        names: dict[str, str] = {}
        try:
            with caller_retries():  # one attempt: this request runs in the very priority level that refuses
                for resource in (FLOW_SCHEMAS, PRIORITY_LEVELS):
                    for item in self._api.list(resource, None).items:
                        meta = item.get("metadata") or {}
                        names[str(meta.get("uid", ""))] = str(meta.get("name", ""))
        except ApiError as error:
            log.debug("Cannot read the API Priority and Fairness objects (UIDs only): %s", error)
            return {}
        return names


def _named(identity: dict[str, str | None]) -> str:
    name, uid = identity["name"], identity["uid"]
    return f"{name!r} (uid {uid})" if name else f"uid {uid}"
