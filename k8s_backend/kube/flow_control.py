"""Which API Priority and Fairness (APF) class an answer came from: its ``X-Kubernetes-PF-*`` headers.

A kube-apiserver with APF (on by default since Kubernetes 1.20) classifies every request by the first
FlowSchema that matches it and runs it in that schema's PriorityLevelConfiguration; it names both, by
UID, in the ``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID`` headers of the
answer. A 429 that carries them was refused by APF (the priority level's seats and queues were full),
not by an admission webhook or a proxy: the fix is the FlowSchema or the priority level, or fewer
requests in flight. Only UIDs travel: turning them into names needs a list of the flowcontrol objects,
which most drivers' roles do not allow (see :mod:`k8s_backend.allocation.throttling`).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"


@attrs.frozen
class FlowControl:
    """The APF classification of one request: its FlowSchema's and PriorityLevelConfiguration's UIDs."""

    flow_schema_uid: str
    priority_level_uid: str

    def describe(self) -> str:
        """``FlowSchema <uid>, PriorityLevelConfiguration <uid>`` (for logs and errors)."""
        return f"FlowSchema {self.flow_schema_uid}, PriorityLevelConfiguration {self.priority_level_uid}"


def flow_control_from_headers(headers: Mapping[str, str]) -> FlowControl | None:
    """The APF classification an answer's headers name, or None when the server sent none (APF off, an
    exempt request on older servers, or not a kube-apiserver).

    ``headers`` must look names up case-insensitively (urllib3's and http.client's do): Go's server
    sends them canonicalised, ``X-Kubernetes-Pf-Flowschema-Uid``.
    """
    flow_schema = (headers.get(FLOW_SCHEMA_HEADER) or "").strip()
    priority_level = (headers.get(PRIORITY_LEVEL_HEADER) or "").strip()
    if not flow_schema and not priority_level:
        return None
    return FlowControl(flow_schema_uid=flow_schema or "?", priority_level_uid=priority_level or "?")
