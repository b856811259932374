"""What each REST request does to the backing API: the verbs of the Kubernetes API server.

Works on any :class:`KubernetesApi` that also has ``update`` (PUT) and ``patch_status`` (the status
subresource), such as :class:`k8s_backend.memkube.InMemoryKubernetes`. Errors are raised as
:class:`ApiError`; the HTTP layer turns them into ``Status`` answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from k8s_backend.kube.port import (
    KNOWN_RESOURCES,
    MERGE_PATCH,
    ApiError,
    Obj,
    Resource,
    WatchStream,
    error_for_status,
)
from k8s_backend.local.apiserver import status
from k8s_backend.local.apiserver.routes import ResourceRoute
from k8s_backend.memkube.patch import apply_patch

_KNOWN = frozenset(KNOWN_RESOURCES)


@attrs.frozen
class Reply:
    """An HTTP answer with a JSON body."""

    code: int
    body: Obj


def bad_request(message: str) -> ApiError:
    return _error(400, message)


def _error(code: int, message: str) -> ApiError:
    body = status.failure(code, message)
    return error_for_status(code, message, reason=body["reason"], body=body)


def is_watch(method: str, route: ResourceRoute, query: Mapping[str, str]) -> bool:
    """Whether a request is a watch (``?watch=true`` or the ``/watch/`` path prefix)."""
    return method == "GET" and (route.watch_prefix or query.get("watch", "").lower() in ("true", "1"))


class Endpoints:
    """The verbs of the API server, applied to ``api``."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def handle(
        self, method: str, route: ResourceRoute, query: Mapping[str, str], body: Any, content_type: str
    ) -> Reply:
        """Serve one non-watch request."""
        if "dryRun" in query:
            raise bad_request("dryRun is not supported by this test API server")
        resource = _resource_for_body(route.resource, body)
        if route.subresource is not None:
            return self._subresource(method, route, resource, body, content_type)
        if route.name is None:
            return self._collection(method, route, resource, query, body)
        namespace, name = route.namespace, route.name
        if method == "GET":
            return Reply(200, self._api.get(resource, namespace, name))
        if method == "PUT":
            _check_body_name(body, name)
            return Reply(200, self._api.update(resource, namespace, body))
        if method == "PATCH":
            patch_type = content_type or MERGE_PATCH
            return Reply(200, self._api.patch(resource, namespace, name, body, patch_type=patch_type))
        if method == "DELETE":
            grace = _delete_options(query, body)
            orphan = _propagation(query, body) == "Orphan"
            # The API server answers with the object it deleted; read it first (a 404 stays a 404).
            deleted = self._api.get(resource, namespace, name)
            self._api.delete(resource, namespace, name, grace_period_seconds=grace, orphan=orphan)
            return Reply(200, deleted)
        raise _error(405, f"{method} is not allowed on {resource.plural}/{name}")

    def _collection(
        self, method: str, route: ResourceRoute, resource: Resource, query: Mapping[str, str], body: Any
    ) -> Reply:
        namespace = route.namespace
        if method == "GET":
            listed = self._api.list(
                resource,
                namespace,
                label_selector=query.get("labelSelector", ""),
                field_selector=query.get("fieldSelector", ""),
                resource_version=query.get("resourceVersion") or None,
            )
            return Reply(200, list_body(resource, listed.items, listed.resource_version))
        if resource.namespaced and namespace is None:
            raise _error(405, f"{method} on {resource.plural} needs a namespace in the path")
        if method == "POST":
            if not isinstance(body, dict):
                raise bad_request(f"the body of a create must be a {resource.kind} object")
            return Reply(201, self._api.create(resource, namespace, body))
        if method == "DELETE":
            grace = _delete_options(query, body)
            if _propagation(query, body) == "Orphan":
                raise bad_request(
                    "propagationPolicy: Orphan is supported by this test API server for one object's "
                    "delete, not a collection's: delete the objects one by one, or use Background"
                )
            self._api.delete_collection(
                resource,
                namespace,
                label_selector=query.get("labelSelector", ""),
                field_selector=query.get("fieldSelector", ""),
                grace_period_seconds=grace,
            )
            return Reply(200, list_body(resource, [], ""))
        raise _error(405, f"{method} is not allowed on the {resource.plural} collection")

    def _subresource(
        self, method: str, route: ResourceRoute, resource: Resource, body: Any, content_type: str
    ) -> Reply:
        namespace, name = route.namespace, route.name
        assert name is not None  # a subresource route always names its object
        if route.subresource != "status":
            raise _error(404, f"the server could not find the requested resource ({route.subresource})")
        if method == "GET":
            return Reply(200, self._api.get(resource, namespace, name))
        if method == "PUT":
            _check_body_name(body, name)
            return Reply(200, self._api.patch_status(resource, namespace, name, _status_of(body)))
        if method == "PATCH":
            current = self._api.get(resource, namespace, name)
            patched = apply_patch(resource, current, body, content_type or MERGE_PATCH)
            return Reply(200, self._api.patch_status(resource, namespace, name, _status_of(patched)))
        raise _error(405, f"{method} is not allowed on {resource.plural}/{name}/status")

    def open_watch(self, route: ResourceRoute, query: Mapping[str, str]) -> WatchStream:
        """Open the watch a request asks for (a single object is watched by a name field selector)."""
        field_selector = query.get("fieldSelector", "")
        if route.name is not None:
            by_name = f"metadata.name={route.name}"
            field_selector = f"{field_selector},{by_name}" if field_selector else by_name
        timeout = query.get("timeoutSeconds")
        stream: WatchStream = self._api.watch(
            route.resource,
            route.namespace,
            label_selector=query.get("labelSelector", ""),
            field_selector=field_selector,
            resource_version=query.get("resourceVersion") or None,
            timeout_seconds=_int_param("timeoutSeconds", timeout) if timeout else None,
            allow_bookmarks=_flag(query, "allowWatchBookmarks"),
            send_initial_events=_streaming_list(query),
        )
        return stream


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


def _streaming_list(query: Mapping[str, str]) -> bool:
    """Whether a watch asks for its initial events (kube-apiserver's checks of the pair, in its words)."""
    if not _flag(query, "sendInitialEvents"):
        return False
    if query.get("resourceVersionMatch") != "NotOlderThan":
        raise _error(
            422, "sendInitialEvents: Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
            "NotOlderThan"
        )  # fmt: skip
    return True


def list_body(resource: Resource, items: list[Obj], resource_version: str) -> Obj:
    """A ``{Kind}List`` document."""
    return {
        "kind": f"{resource.kind}List",
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": resource_version},
        "items": items,
    }


def _resource_for_body(resource: Resource, body: Any) -> Resource:
    # A custom resource's Kind cannot be derived from its plural reliably: trust the body's.
    if resource not in _KNOWN and isinstance(body, dict) and isinstance(body.get("kind"), str):
        return attrs.evolve(resource, kind=body["kind"])
    return resource


def _check_body_name(body: Any, name: str) -> None:
    meta = body.get("metadata") if isinstance(body, dict) else None
    given = meta.get("name") if isinstance(meta, dict) else None
    if given != name:
        raise bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")


def _status_of(obj: Any) -> Obj:
    value = obj.get("status") if isinstance(obj, dict) else None
    if not isinstance(value, dict):
        raise bad_request('a status update needs the object\'s status: {"status": {...}}')
    return value


def _delete_options(query: Mapping[str, str], body: Any) -> int | None:
    """gracePeriodSeconds from the DeleteOptions body or the query (the body wins, as on the server)."""
    if isinstance(body, dict) and body.get("gracePeriodSeconds") is not None:
        return _int_param("gracePeriodSeconds", str(body["gracePeriodSeconds"]))
    value = query.get("gracePeriodSeconds")
    return _int_param("gracePeriodSeconds", value) if value else None


PROPAGATION_POLICIES = ("Background", "Orphan")


def _propagation(query: Mapping[str, str], body: Any) -> str:
    """propagationPolicy from the DeleteOptions body or the query (``orphanDependents: true``, its older
    form, is Orphan); Background when neither names one. Foreground (dependents deleted before the owner)
    is not implemented here, and is refused rather than served as another policy."""
    options = body if isinstance(body, dict) else {}
    policy = options.get("propagationPolicy") or query.get("propagationPolicy")
    orphan_dependents = options.get("orphanDependents", query.get("orphanDependents"))
    if policy is None and orphan_dependents is not None:
        policy = "Orphan" if str(orphan_dependents).lower() == "true" else "Background"
    policy = policy or "Background"
    if policy not in PROPAGATION_POLICIES:
        raise bad_request(
            f"propagationPolicy {policy!r} is not supported by this test API server: use one of "
            f"{', '.join(PROPAGATION_POLICIES)}"
        )
    return str(policy)


def _int_param(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{name} must be an integer, got {value!r}") from None
