"""``GET pods/{name}/log``: a container's log, as the API server proxies it from the kubelet.

The kubelet writes each container's output to a file; :data:`LogLocator` finds it. The answers follow
the real server's: 404 for a pod that does not exist, 400 naming the choices when a pod has several
containers and none is named, 400 "is waiting to start" before the container ran, then the text
(``tailLines`` and ``limitBytes`` honoured). ``follow=true`` streams new output (chunked) until the
container has terminated and its file is drained, or the client goes away.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from k8s_backend.kube.port import PODS, ApiError, Obj
from k8s_backend.local.apiserver.endpoints import bad_request

LogLocator = Callable[[str, str, str], "Path | None"]
"""``locate(namespace, pod, container)``: the container's log file, or None before it started."""

FOLLOW_POLL = 0.1  # seconds between looks at a followed file that has no new output


def container_of(pod: Obj, query: Mapping[str, str]) -> str:
    """The container the request names, or the pod's only one."""
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    wanted = query.get("container", "")
    pod_name = pod["metadata"]["name"]
    if wanted:
        if wanted not in names:
            raise bad_request(f"container {wanted} is not valid for pod {pod_name}")
        return wanted
    if len(names) != 1:
        raise bad_request(
            f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
        )
    return names[0]


def _state(pod: Obj, container: str) -> Obj:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            return dict(status.get("state") or {})
    return {}


def waiting_reason(pod: Obj, container: str) -> str | None:
    """Why the container's log cannot be read yet (None once it started)."""
    state = _state(pod, container)
    if "running" in state or "terminated" in state:
        return None
    return str((state.get("waiting") or {}).get("reason") or "ContainerCreating")


def _int(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name}={raw!r} is not an integer") from None
    if value < 0:
        raise bad_request(f"{name} must be non-negative (got {value})")
    return value


def _tail(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines == 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


class PodLogs:
    """Answers ``pods/{name}/log`` from ``api`` (the pod) and ``locate`` (the kubelet's files)."""

    def __init__(self, api: Any, locate: LogLocator) -> None:
        self._api = api
        self._locate = locate

    def open(self, namespace: str, name: str, query: Mapping[str, str]) -> tuple[Path, str, bool]:
        """``(file, container, follow)`` for a request; :class:`ApiError` as the server answers."""
        pod = self._api.get(PODS, namespace, name)
        container = container_of(pod, query)
        for number in ("tailLines", "limitBytes"):  # bad values fail before anything is sent
            _int(query, number)
        reason = waiting_reason(pod, container)
        path = None if reason is not None else self._locate(namespace, name, container)
        if path is None or not path.exists():
            why = reason or "ContainerCreating"
            raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {why}')
        return path, container, query.get("follow", "").lower() in ("true", "1")

    def text(self, path: Path, query: Mapping[str, str]) -> bytes:
        """The whole answer of a request without ``follow``."""
        data = _tail(path.read_bytes(), _int(query, "tailLines"))
        limit = _int(query, "limitBytes")
        return data if limit is None else data[:limit]

    def follow(
        self, namespace: str, name: str, container: str, path: Path, stop: threading.Event
    ) -> Iterator[bytes]:
        """Chunks of the file as it grows, until the container terminated and all was read."""
        with path.open("rb") as handle:
            while True:
                chunk = handle.read(65536)
                if chunk:
                    yield chunk
                    continue
                if stop.is_set() or self._ended(namespace, name, container):
                    rest = handle.read()
                    if rest:
                        yield rest
                    return
                stop.wait(FOLLOW_POLL)

    def _ended(self, namespace: str, name: str, container: str) -> bool:
        try:
            pod = self._api.get(PODS, namespace, name)
        except ApiError:
            return True  # deleted: nothing more will be written
        return "terminated" in _state(pod, container)
