"""A streaming list's initial part, read into the store: the one rule the watch and polling sources share.

A watch opened with ``send_initial_events`` (Kubernetes' WatchList, see
:meth:`k8s_backend.kube.port.KubernetesApi.watch`) first sends every matching pod as ADDED, then a
bookmark annotated ``k8s.io/initial-events-end``. Until that bookmark its events are a list: each pod
goes to a :class:`~k8s_backend.snapshots.store.Relist`, which keeps only its compact state, so the
decoded pods never pile up (a relist's peak memory at 10,000 executors on kube-apiserver v1.37.2: 44 MiB
against 431 MiB for a list, ``benchmarks/real_scale.py``). Anything else before that bookmark means the
server ignored the request (kube-apiserver before 1.27) and sends a plain watch.
"""

from __future__ import annotations

import enum

from k8s_backend.kube.port import INITIAL_EVENTS_END, WatchEvent
from k8s_backend.snapshots.store import Relist

STREAMING_LIST_KEY = "spark.kubernetes.executor.watch.streamingList"


class Initial(enum.Enum):
    """What one event of a streaming list's initial part was."""

    POD = "pod"  # a listed pod, given to the relist
    END = "end"  # the bookmark that ends the list: the relist is applied
    NOT_STREAMING = "not streaming"  # the server does not stream lists: the relist is to be dropped


def initial_event(event: WatchEvent, relist: Relist) -> tuple[Initial, str | None]:
    """Apply one event of a streaming list's initial part; with :attr:`Initial.END`, the list's version."""
    if event.type == "ADDED":
        relist.add(event.object)
        return Initial.POD, None
    metadata = event.object.get("metadata") or {}
    if event.type == "BOOKMARK" and (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
        version = str(metadata.get("resourceVersion") or "") or None
        relist.finish(version)
        return Initial.END, version
    return Initial.NOT_STREAMING, None


def not_offered(why: str) -> str:
    """The one log line of a source that falls back to lists."""
    return (
        f"The API server does not offer streaming lists ({why}); listing executor pods instead "
        f"({STREAMING_LIST_KEY}=false says so at once)"
    )
