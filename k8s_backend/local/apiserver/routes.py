"""Turn a request path into what it addresses: a discovery document, or a resource collection or object.

Paths follow the API server's layout::

    /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /api/v1/namespaces[/{name}[/{subresource}]]          (namespaces are cluster-scoped)
    /api/v1/watch/...                                     (the deprecated watch prefix)

Known kinds come from :data:`KNOWN_RESOURCES`; any other ``/apis/{group}/{version}`` plural is served as
a generic custom resource, so new CRDs need no code here.
"""

from __future__ import annotations

import attrs

from k8s_backend.kube.port import KNOWN_RESOURCES, Resource

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})  # /api/v1/namespaces/{name}/{sub}
_KNOWN: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in KNOWN_RESOURCES}


@attrs.frozen
class ResourceRoute:
    """A resource request: the collection (``name`` None) or one object, maybe a subresource."""

    resource: Resource
    namespace: str | None
    name: str | None = None
    subresource: str | None = None
    watch_prefix: bool = False


@attrs.frozen
class DiscoveryRoute:
    """A discovery document: ``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}[/{version}]``."""

    path: str


Route = ResourceRoute | DiscoveryRoute


class RouteError(ValueError):
    """The path addresses nothing this server serves (answered 404)."""


def resource_for(group: str, version: str, plural: str, *, namespaced: bool = True) -> Resource:
    """The known :class:`Resource`, or a generic custom resource named after its plural."""
    known = _KNOWN.get((group, version, plural))
    if known is not None:
        return known
    if not group:
        raise RouteError(f"the server could not find the requested resource ({version} {plural})")
    kind = _guess_kind(plural)
    return Resource(kind=kind, plural=plural, group=group, version=version, namespaced=namespaced)


def parse_path(path: str) -> Route:
    """The :data:`Route` for a URL path (no query); :class:`RouteError` if it addresses nothing."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis", "version"):
        raise RouteError(f"the server could not find the requested resource ({path})")
    if parts[0] == "version" and len(parts) == 1:
        return DiscoveryRoute("/version")
    if parts[0] == "api":
        if len(parts) <= 2:
            return DiscoveryRoute("/" + "/".join(parts))
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) <= 3:
            return DiscoveryRoute("/" + "/".join(parts))
        group, version, rest = parts[1], parts[2], parts[3:]
    return _resource_route(group, version, rest, path)


def _resource_route(group: str, version: str, rest: list[str], path: str) -> ResourceRoute:
    watch_prefix = rest[0] == "watch"
    if watch_prefix:
        rest = rest[1:]
    if not rest:
        raise RouteError(f"the server could not find the requested resource ({path})")
    namespace: str | None = None
    namespace_subresource = not group and len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES
    if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_subresource:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and not group:
        # /api/v1/namespaces[/{name}[/{sub}]]: the Namespace kind itself.
        return _object_route(resource_for("", version, "namespaces"), None, rest[1:], path, watch_prefix)
    resource = resource_for(group, version, rest[0], namespaced=namespace is not None)
    if namespace is not None and not resource.namespaced:
        raise RouteError(f"{resource.plural} is not a namespaced resource ({path})")
    return _object_route(resource, namespace, rest[1:], path, watch_prefix)


def _object_route(
    resource: Resource, namespace: str | None, rest: list[str], path: str, watch_prefix: bool
) -> ResourceRoute:
    if len(rest) > 2:
        raise RouteError(f"the server could not find the requested resource ({path})")
    name = rest[0] if rest else None
    subresource = rest[1] if len(rest) == 2 else None
    return ResourceRoute(resource, namespace, name, subresource, watch_prefix)


def _guess_kind(plural: str) -> str:
    """A Kind for an unknown plural (``widgets`` -> ``Widget``); the body's kind is used where given."""
    singular = plural[:-1] if plural.endswith("s") else plural
    return singular[:1].upper() + singular[1:]
