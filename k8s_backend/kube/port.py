"""The one narrow port through which the library talks to the Kubernetes API.

Everything outside ``k8s_backend.kube`` and ``k8s_backend.testing`` sees Kubernetes only through
:class:`KubernetesApi`. Objects cross the port as plain JSON-like dicts (``Obj``): turning API objects
into the official client's model classes costs ~15x more than reading the JSON, and the hot paths
(watch events, resyncs of thousands of pods) must stay cheap.

Two adapters implement it: :class:`k8s_backend.kube.client.OfficialKubernetesApi` (the official
``kubernetes`` client) and :class:`k8s_backend.memkube.InMemoryKubernetes` (in memory).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import attrs

from k8s_backend.kube.flow_control import FlowControl

Obj = dict[str, Any]
"""A Kubernetes object as plain JSON data (``{"apiVersion": ..., "metadata": {...}, ...}``)."""


@attrs.frozen
class Resource:
    """Where a kind of object lives in the REST API."""

    kind: str
    plural: str
    group: str = ""  # "" is the core group (/api/v1)
    version: str = "v1"
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of the collection (or of one object when ``name`` is given)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name is not None else base


PODS = Resource("Pod", "pods")
CONFIG_MAPS = Resource("ConfigMap", "configmaps")
SERVICES = Resource("Service", "services")
SECRETS = Resource("Secret", "secrets")
PVCS = Resource("PersistentVolumeClaim", "persistentvolumeclaims")
NAMESPACES = Resource("Namespace", "namespaces", namespaced=False)
POD_GROUPS = Resource("PodGroup", "podgroups", group="scheduling.volcano.sh", version="v1beta1")
LEASES = Resource("Lease", "leases", group="coordination.k8s.io")  # a client-mode driver's heartbeat
EVENTS = Resource("Event", "events")  # core/v1 Events, read by `k8s-backend events`
NODES = Resource("Node", "nodes", namespaced=False)  # read for cordons and disruption taints
# The executors' NetworkPolicy a cluster-mode driver owns (pods/driver/network_policy.py).
NETWORK_POLICIES = Resource("NetworkPolicy", "networkpolicies", group="networking.k8s.io")

KNOWN_RESOURCES: tuple[Resource, ...] = (
    PODS,
    CONFIG_MAPS,
    SERVICES,
    SECRETS,
    PVCS,
    NAMESPACES,
    POD_GROUPS,
    LEASES,
    EVENTS,
)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@attrs.frozen
class ObjectList:
    """The result of a LIST: the items and the collection's resourceVersion at the time of the list."""

    items: list[Obj]
    resource_version: str


@attrs.frozen
class WatchEvent:
    """One event of a watch stream. ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK.

    ERROR events never reach callers: adapters raise the matching :class:`ApiError` from the
    stream instead (a :class:`GoneError` for 410 "too old resource version").
    """

    type: str
    object: Obj


class WatchStream(Protocol):
    """An open watch. Iterating yields events until the server or :meth:`close` ends the stream."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


@runtime_checkable
class KubernetesApi(Protocol):
    """Everything the library does with the Kubernetes API.

    Errors are raised as :class:`ApiError` subclasses, whatever the adapter. Adapters retry 429, 5xx
    and connection errors themselves; a caller sees an error only once retries are exhausted.
    """

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        """Create an object; :class:`ConflictError` if the name exists, :class:`InvalidError` if invalid."""
        ...

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        """Read one object; :class:`NotFoundError` if it does not exist."""
        ...

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
    ) -> ObjectList:
        """List objects matching the selectors (``resource_version="0"`` allows a cached read)."""
        ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> WatchStream:
        """Watch changes after ``resource_version``; the server ends the stream after ``timeout_seconds``.

        ``send_initial_events``: a streaming list (Kubernetes' WatchList). The stream starts with every
        matching object as an ADDED event, then a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``
        carrying the version they were read at, then the changes after it; ``resource_version`` is the
        oldest version the objects may be read at (None: the newest, as a consistent list). The end
        bookmark comes only with ``allow_bookmarks``. A server without the feature answers
        :class:`BadRequestError` or :class:`InvalidError`; kube-apiserver before 1.27 ignores the parameter
        and sends the objects, then changes, with no end bookmark.
        """
        ...

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Obj | builtins.list[Obj],
        *,
        patch_type: str = MERGE_PATCH,
    ) -> Obj:
        """Patch one object (JSON merge patch by default; strategic merge and JSON patch allowed)."""
        ...

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        orphan: bool = False,
    ) -> None:
        """Delete one object; :class:`NotFoundError` if it does not exist. Its dependents (objects whose
        ownerReferences name it) are deleted after it, or with ``orphan`` kept, their reference to it
        removed (``propagationPolicy: Orphan``)."""
        ...

    def delete_collection(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
    ) -> None:
        """Delete every object matching the selectors (background propagation)."""
        ...

    def close(self) -> None:
        """Release connections; the adapter must not be used afterwards."""
        ...


INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""The annotation of the bookmark that ends a streaming list's initial events (value ``"true"``)."""


class ApiError(Exception):
    """An error answered by (or on the way to) the Kubernetes API server.

    ``retry_after``: seconds the server asked the client to wait (``Retry-After``); ``flow_control``: the
    API Priority and Fairness FlowSchema and priority level the server ran the request in, when it
    named them (the ``X-Kubernetes-PF-*`` headers; a 429 with them is APF's refusal).
    """

    status: int = 0
    default_reason: str = "Unknown"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str | None = None,
        retry_after: float | None = None,
        body: Obj | None = None,
        flow_control: FlowControl | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.reason = reason or self.default_reason
        self.message = message
        self.retry_after = retry_after
        self.body = body
        self.flow_control = flow_control  # the APF class that answered, when the server named it

    def __str__(self) -> str:
        code = f"{self.status} " if self.status else ""
        return f"{code}{self.reason}: {self.message}"


class BadRequestError(ApiError):
    status = 400
    default_reason = "BadRequest"


class UnauthorizedError(ApiError):
    status = 401
    default_reason = "Unauthorized"


class ForbiddenError(ApiError):
    status = 403
    default_reason = "Forbidden"


class NotFoundError(ApiError):
    status = 404
    default_reason = "NotFound"


class ConflictError(ApiError):
    status = 409
    default_reason = "AlreadyExists"


class GoneError(ApiError):
    """410: the requested resourceVersion is older than the server keeps (re-list, then watch)."""

    status = 410
    default_reason = "Expired"


class InvalidError(ApiError):
    status = 422
    default_reason = "Invalid"


class TooManyRequestsError(ApiError):
    status = 429
    default_reason = "TooManyRequests"


class ServerError(ApiError):
    status = 500
    default_reason = "InternalError"


class ApiConnectionError(ApiError):
    """The server could not be reached, or did not answer in time (no HTTP status)."""

    status = 0
    default_reason = "ConnectionError"


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def error_for_status(
    status: int,
    message: str,
    *,
    reason: str | None = None,
    retry_after: float | None = None,
    body: Obj | None = None,
    flow_control: FlowControl | None = None,
) -> ApiError:
    """The :class:`ApiError` subclass instance for an HTTP status code."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    return cls(
        message, status=status, reason=reason, retry_after=retry_after, body=body, flow_control=flow_control
    )


def is_retryable(error: BaseException) -> bool:
    """Whether an API error is worth retrying: throttling, server errors and connection problems."""
    if isinstance(error, (TooManyRequestsError, ServerError, ApiConnectionError)):
        return True
    return isinstance(error, ApiError) and error.status >= 500
