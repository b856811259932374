"""An HTTP Kubernetes API server for tests, in front of :class:`k8s_backend.memkube.InMemoryKubernetes`.

``ApiServer(InMemoryKubernetes(), token=...)`` serves pods, config maps, services, PVCs, namespaces and any
custom resource (Volcano PodGroups) with list/watch (chunked or WebSocket), create, get, replace,
patch, delete and delete-collection, discovery, and ``Status`` error bodies.
"""

from k8s_backend.local.apiserver.server import ApiServer, RequestRecord

__all__ = ["ApiServer", "RequestRecord"]
