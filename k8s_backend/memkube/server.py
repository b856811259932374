"""The API-server semantics behind InMemoryKubernetes: metadata, validation, writes and events.

Deletion (grace periods, finalizers, garbage collection) lives in :mod:`~k8s_backend.memkube.deletion`.
Methods here assume the caller holds the fake's lock and return stored dicts, which callers must copy before
handing them out.
"""

from __future__ import annotations

import builtins
import random
import threading
import uuid
from datetime import datetime, timezone

from k8s_backend.common import Clock
from k8s_backend.kube import resource_version as versions
from k8s_backend.kube.port import NAMESPACES, PODS, Obj, ObjectList, Resource
from k8s_backend.memkube.decode import decode
from k8s_backend.memkube.defaults import apply_defaults, canonical_resources, omit_empty_maps
from k8s_backend.memkube.errors import (
    REQUIRED,
    FieldError,
    already_exists,
    api_error,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from k8s_backend.memkube.patch import apply_patch
from k8s_backend.memkube.selectors import parse_field_selector, parse_label_selector, supported_fields
from k8s_backend.memkube.store import ObjectStore, ObjKey, json_copy, res_key
from k8s_backend.memkube.validation import validate_object, validate_update
from k8s_backend.memkube.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    EventLog,
    FakeWatchStream,
    StoredEvent,
    WatchFilter,
)

SERVICE_ACCOUNTS = Resource("ServiceAccount", "serviceaccounts")
BUILT_IN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's: no vowels, no look-alikes
_SYSTEM_FIELDS = ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "uid", "generation")


def rfc3339(seconds: float) -> str:
    """A timestamp as the API server writes it (whole seconds, UTC, ``Z``)."""
    return datetime.fromtimestamp(int(seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_resource_version(value: str | None) -> int | None:
    """None for "any"/"latest" (None, "" or "0"), else the integer; 400 when it is not a number."""
    if value is None or value in ("", "0"):
        return None
    version = versions.parse_resource_version(value)
    if version is None:
        raise bad_request(f"invalid resourceVersion {value!r}: a resourceVersion is a decimal integer string")
    return version


class FakeServer:
    """Objects, resourceVersions and events of the fake API server (not thread-safe on its own)."""

    def __init__(
        self,
        clock: Clock,
        lock: threading.RLock,
        *,
        history_size: int,
        watch_blocking: bool,
        seed: int | None,
    ) -> None:
        self.clock = clock
        self.store = ObjectStore()
        self.log = EventLog(lock, history_size, blocking=watch_blocking)
        self._random = random.Random(seed)

    # --- helpers ----------------------------------------------------------------------------------

    def key(self, resource: Resource, namespace: str | None, name: str) -> ObjKey:
        return (self.store.register(resource), self.namespace_key(resource, namespace), name)

    @staticmethod
    def namespace_key(resource: Resource, namespace: str | None) -> str:
        if not resource.namespaced:
            return ""
        if not namespace:
            raise bad_request(f"{resource.plural} are namespaced: pass the namespace of the object")
        return namespace

    def existing(self, resource: Resource, namespace: str | None, name: str) -> tuple[ObjKey, Obj]:
        key = self.key(resource, namespace, name)
        obj = self.store.get(key)
        if obj is None:
            raise not_found(resource, name)
        return key, obj

    def now(self) -> str:
        return rfc3339(self.clock.now())

    def write(self, resource: Resource, key: ObjKey, obj: Obj, prev: Obj | None) -> Obj:
        """Store ``obj`` (owned by the store from now on) with a new resourceVersion, and emit its event."""
        rv = self.log.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        self.store.put(key, obj)
        self.log.record(StoredEvent(rv, key[0], ADDED if prev is None else MODIFIED, obj, prev))
        return obj

    def erase(self, key: ObjKey, last: Obj) -> Obj:
        """Remove an object, emitting DELETED with its last state at a new resourceVersion."""
        final = json_copy(last)
        meta = final["metadata"]
        meta.setdefault("deletionTimestamp", self.now())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        rv = self.log.next_rv()
        meta["resourceVersion"] = str(rv)
        self.store.remove(key)
        self.log.record(StoredEvent(rv, key[0], DELETED, final))
        return final

    # --- create -----------------------------------------------------------------------------------

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        if not isinstance(body, dict):
            raise bad_request(f"the body of a create must be a JSON object, got {type(body).__name__}")
        self.check_type(resource, body)
        body = decode(resource, json_copy(body))
        # apiVersion and kind first, as the server writes them.
        obj = {"apiVersion": resource.api_version, "kind": resource.kind, **json_copy(body)}
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be a JSON object")
        if resource.namespaced:
            given = meta.get("namespace")
            if namespace and given and given != namespace:
                raise bad_request(  # the real server's words, without the two names
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace or given or "default"
        else:
            meta.pop("namespace", None)
        for field in (*_SYSTEM_FIELDS, "resourceVersion"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        meta["creationTimestamp"] = self.now()
        if res_key(resource) == res_key(PODS):
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        elif res_key(resource) == res_key(NAMESPACES):
            obj.setdefault("status", {}).setdefault("phase", "Active")
        name = meta.get("name") or self._generate_name(resource, meta)
        if not isinstance(name, str):
            raise bad_request(f"metadata.name must be a string, got {name!r}")
        meta["name"] = name
        apply_defaults(resource, obj)
        canonical_resources(resource, obj)
        errors = validate_object(resource, obj)
        if errors:
            raise invalid(resource, str(name), errors)
        key = self.key(resource, meta.get("namespace"), str(name))
        if resource.namespaced:
            self._check_namespace(str(meta["namespace"]))
        if res_key(resource) == res_key(PODS):
            self._check_service_account(str(meta["namespace"]), str(name), obj.get("spec") or {})
        if self.store.get(key) is not None:
            raise already_exists(resource, str(name))
        return self.write(resource, key, obj, None)

    def _check_service_account(self, namespace: str, name: str, spec: Obj) -> None:
        """403 for a pod naming a ServiceAccount that does not exist (the ServiceAccount admission
        plugin); every namespace's ``default`` exists (the controller manager creates it)."""
        account = str(spec.get("serviceAccountName") or "default")
        if account == "default" or self.store.get(self.key(SERVICE_ACCOUNTS, namespace, account)) is not None:
            return
        message = (
            f'pods "{name}" is forbidden: error looking up service account {namespace}/{account}: '
            f'serviceaccount "{account}" not found'
        )
        raise api_error(403, "Forbidden", message, resource=PODS, name=name)

    def _check_namespace(self, namespace: str) -> None:
        """404 for a create in a namespace that does not exist (the NamespaceLifecycle admission plugin);
        the namespaces every cluster has exist without being created."""
        if namespace in BUILT_IN_NAMESPACES:
            return
        if self.store.get(self.key(NAMESPACES, None, namespace)) is None:
            raise not_found(NAMESPACES, namespace)

    @staticmethod
    def check_type(resource: Resource, obj: Obj) -> None:
        """400 when the body names another kind or API version than the resource."""
        if obj.get("kind", resource.kind) != resource.kind:
            raise bad_request(
                f"the kind in the data ({obj['kind']}) does not match the expected kind ({resource.kind})"
            )
        if obj.get("apiVersion", resource.api_version) != resource.api_version:
            raise bad_request(
                f"the API version in the data ({obj['apiVersion']}) does not match the expected API version "
                f"({resource.api_version})"
            )

    def _generate_name(self, resource: Resource, meta: dict[str, object]) -> str:
        prefix = meta.get("generateName")
        if not prefix or not isinstance(prefix, str):
            raise invalid(
                resource,
                "",
                [FieldError("metadata.name", REQUIRED, detail="name or generateName is required")],
            )
        namespace = meta.get("namespace")
        for _ in range(8):  # the server retries a colliding generated name a few times
            name = prefix + "".join(self._random.choice(_SUFFIX_ALPHABET) for _ in range(5))
            if self.store.get(self.key(resource, str(namespace) if namespace else None, name)) is None:
                return name
        raise already_exists(resource, prefix)

    # --- reads ------------------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        return self.existing(resource, namespace, name)[1]

    def watch_filter(
        self, resource: Resource, namespace: str | None, label_selector: str, field_selector: str
    ) -> WatchFilter:
        return WatchFilter(
            (namespace or None) if resource.namespaced else None,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector, supported_fields(resource)),
        )

    def select(self, resource: Resource, watch_filter: WatchFilter) -> list[tuple[ObjKey, Obj]]:
        return [
            (key, obj)
            for key, obj in self.store.items(self.store.register(resource), watch_filter.namespace or None)
            if watch_filter.matches(obj)
        ]

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        label_selector: str,
        field_selector: str,
        resource_version: str | None,
    ) -> ObjectList:
        parse_resource_version(resource_version)
        selected = self.select(
            resource, self.watch_filter(resource, namespace, label_selector, field_selector)
        )
        return ObjectList([obj for _, obj in selected], str(self.log.current_rv))

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str,
        field_selector: str,
        resource_version: str | None,
        timeout_seconds: int | None,
        allow_bookmarks: bool,
        send_initial_events: bool = False,
    ) -> FakeWatchStream:
        since = parse_resource_version(resource_version)
        watch_filter = self.watch_filter(resource, namespace, label_selector, field_selector)
        if send_initial_events:
            # A streaming list: the objects as they are now (never older than any version asked), the
            # bookmark that ends them (only if bookmarks are allowed, as kube-apiserver), then the changes.
            since = None
        initial = [obj for _, obj in self.select(resource, watch_filter)] if since is None else []
        return self.log.open(
            resource,
            watch_filter,
            since=since,
            initial=initial,
            allow_bookmarks=allow_bookmarks,
            timeout_seconds=timeout_seconds,
            end_initial=send_initial_events and allow_bookmarks,
        )

    # --- updates ----------------------------------------------------------------------------------

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Obj | builtins.list[Obj],
        patch_type: str,
    ) -> tuple[ObjKey, Obj, Obj]:
        """Apply a patch: (key, stored state before, proposed new state); the caller commits it."""
        key, current = self.existing(resource, namespace, name)
        return key, current, apply_patch(resource, current, patch, patch_type)

    @staticmethod
    def prepare_update(
        resource: Resource, current: Obj, proposed: Obj, *, keep_status: bool = True
    ) -> Obj | None:
        """Check and complete a proposed new state; None when it changes nothing (a no-op)."""
        meta = proposed.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata must be a JSON object")
        current_meta = current["metadata"]
        if meta.get("name") != current_meta["name"]:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({current_meta['name']})"
            )
        if (
            resource.namespaced
            and meta.get("namespace", current_meta["namespace"]) != current_meta["namespace"]
        ):
            raise bad_request(
                f"the namespace of the provided object ({meta.get('namespace')}) does not match the "
                f"namespace sent on the request ({current_meta['namespace']})"
            )
        given_rv = meta.get("resourceVersion")
        if given_rv and given_rv != current_meta["resourceVersion"]:
            raise conflict(resource, current_meta["name"])
        errors = validate_update(resource, current, proposed)
        # System fields are the server's: a client cannot set or clear them.
        for field in (*_SYSTEM_FIELDS, "resourceVersion", "namespace"):
            if field in current_meta:
                meta[field] = current_meta[field]
            else:
                meta.pop(field, None)
        proposed["apiVersion"], proposed["kind"] = resource.api_version, resource.kind
        if keep_status:
            # The main resource ignores status changes: status is written through its subresource.
            if "status" in current:
                proposed["status"] = json_copy(current["status"])
            else:
                proposed.pop("status", None)
        omit_empty_maps(proposed)
        canonical_resources(resource, proposed)
        errors += validate_object(resource, proposed)
        if errors:
            raise invalid(resource, current_meta["name"], errors)
        return None if proposed == current else proposed

    def replace_status(
        self, resource: Resource, namespace: str | None, name: str, status: Obj
    ) -> tuple[ObjKey, Obj, Obj]:
        key, current = self.existing(resource, namespace, name)
        proposed = json_copy(current)
        proposed["status"] = json_copy(status)
        return key, current, proposed

    def bind(self, namespace: str, name: str, node_name: str) -> Obj:
        key, current = self.existing(PODS, namespace, name)
        bound = current.get("spec", {}).get("nodeName")
        if bound:
            raise api_error(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned '
                f'to node "{bound}"',
                resource=PODS,
                name=name,
            )
        proposed = json_copy(current)
        proposed.setdefault("spec", {})["nodeName"] = node_name
        return self.write(PODS, key, proposed, current)
