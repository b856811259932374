"""How objects leave the fake: grace periods, finalizers and owner-reference garbage collection.

- An object with finalizers gets ``deletionTimestamp`` and stays until its finalizers are removed.
- With ``graceful_pod_deletion``, a pod deleted with a grace period > 0 (and not already Succeeded or
  Failed) gets ``deletionTimestamp = now + grace`` and stays until :meth:`Deletions.finalize` (what a
  kubelet does once the containers stopped) or until the fake's clock passes that time (:meth:`tick`).
- Anything else is removed at once; the DELETED event carries the last state, with deletionTimestamp.
  A pod, as on a real server, first gets ``deletionTimestamp`` and ``deletionGracePeriodSeconds: 0``
  (a MODIFIED event), then is removed (DELETED).
- When an object is removed, its dependents (objects whose ownerReferences name its uid) are deleted
  too, in the background style: after the owner. A dependent that still has another live owner only
  loses the reference. Removing a Namespace deletes every object in it.
- An object deleted with ``propagationPolicy: Orphan`` first loses its dependents: each one's reference to
  it is removed (a MODIFIED event), as the real garbage collector does before it lifts the ``orphan``
  finalizer (here at once, not in the background).

Dangling ownerReferences (an owner removed before the dependent was created) are not collected.
"""

from __future__ import annotations

from collections import deque

from k8s_backend.kube.port import NAMESPACES, PODS, Obj, Resource
from k8s_backend.memkube.errors import bad_request, not_found
from k8s_backend.memkube.server import FakeServer, rfc3339
from k8s_backend.memkube.store import ObjKey, json_copy, res_key

DEFAULT_POD_GRACE_SECONDS = 30
_TERMINAL_PHASES = ("Succeeded", "Failed")


class Deletions:
    """Deletion semantics on top of a :class:`FakeServer` (the caller holds the fake's lock)."""

    def __init__(self, server: FakeServer, *, graceful_pod_deletion: bool) -> None:
        self._server = server
        self._graceful = graceful_pod_deletion
        self._pending: dict[ObjKey, float] = {}  # pods waiting for their kubelet, by deadline
        self._removed: deque[tuple[ObjKey, Obj]] = deque()
        self._collecting = False

    def commit(self, resource: Resource, key: ObjKey, current: Obj, proposed: Obj | None) -> Obj:
        """Store an update (None: a no-op); an update that lifts the last finalizer removes the object."""
        if proposed is None:
            return current
        if self._removable(key, proposed):
            return self._remove(key, proposed)
        return self._server.write(resource, key, proposed, current)

    def _removable(self, key: ObjKey, obj: Obj) -> bool:
        meta = obj["metadata"]
        return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and key not in self._pending

    def delete(self, resource: Resource, key: ObjKey, grace_period_seconds: int | None) -> None:
        """Delete one object (NotFound if it is not there)."""
        current = self._server.store.get(key)
        if current is None:
            raise not_found(resource, key[2])
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 1  # as the real server: a negative grace period is read as 1 second
        now = self._server.clock.now()
        if current["metadata"].get("deletionTimestamp"):
            self._shorten(resource, key, current, grace_period_seconds, now)
            return
        grace = self._pod_grace(resource, current, grace_period_seconds)
        is_pod = res_key(resource) == res_key(PODS)
        if grace == 0 and not current["metadata"].get("finalizers") and not is_pod:
            self._remove(key, current)
            return
        terminating = json_copy(current)
        terminating["metadata"]["deletionTimestamp"] = rfc3339(now + grace)
        terminating["metadata"]["deletionGracePeriodSeconds"] = grace
        if grace > 0:
            self._pending[key] = now + grace
        written = self._server.write(resource, key, terminating, current)
        if grace == 0 and self._removable(key, written):
            # A real server deletes every pod gracefully, even with a grace period of 0: watchers see
            # MODIFIED (deletionTimestamp, deletionGracePeriodSeconds 0), then DELETED.
            self._remove(key, written)

    def _pod_grace(self, resource: Resource, pod: Obj, requested: int | None) -> int:
        if not self._graceful or res_key(resource) != res_key(PODS):
            return 0
        if pod.get("status", {}).get("phase") in _TERMINAL_PHASES:
            return 0  # nothing left to stop
        if requested is not None:
            return requested
        configured = pod.get("spec", {}).get("terminationGracePeriodSeconds")
        return int(configured) if configured is not None else DEFAULT_POD_GRACE_SECONDS

    def _shorten(self, resource: Resource, key: ObjKey, current: Obj, grace: int | None, now: float) -> None:
        # Deleting a terminating object again may only shorten its grace period.
        if key not in self._pending or grace is None or now + grace >= self._pending[key]:
            return
        if grace == 0:
            del self._pending[key]
            if self._removable(key, current):
                forced = json_copy(current)  # a real server reports the forced grace period of 0
                forced["metadata"]["deletionGracePeriodSeconds"] = 0
                self._remove(key, forced)
            return
        shorter = json_copy(current)
        shorter["metadata"]["deletionTimestamp"] = rfc3339(now + grace)
        shorter["metadata"]["deletionGracePeriodSeconds"] = grace
        self._pending[key] = now + grace
        self._server.write(resource, key, shorter, current)

    def orphan_dependents(self, key: ObjKey) -> None:
        """Remove every reference to the object at ``key`` from its dependents (they stay)."""
        owner = self._server.store.get(key)
        uid = None if owner is None else owner["metadata"].get("uid")
        if not uid:
            return
        for dependent_key in self._server.store.dependents(uid):
            self._drop_reference(dependent_key, uid)

    def finalize(self, resource: Resource, key: ObjKey) -> None:
        """End the grace period of a terminating object: remove it unless finalizers remain."""
        current = self._server.store.get(key)
        if current is None:
            raise not_found(resource, key[2])
        if not current["metadata"].get("deletionTimestamp"):
            raise bad_request(
                f'{resource.plural} "{key[2]}" is not being deleted (no deletionTimestamp): delete it before '
                "finalizing it"
            )
        self._pending.pop(key, None)
        if self._removable(key, current):
            self._remove(key, current)

    def tick(self) -> None:
        """Remove terminating pods whose grace period has passed on the fake's clock."""
        now = self._server.clock.now()
        for key, deadline in sorted(self._pending.items(), key=lambda item: (item[1], item[0])):
            if deadline <= now:
                del self._pending[key]
                current = self._server.store.get(key)
                if current is not None and self._removable(key, current):
                    self._remove(key, current)

    def _remove(self, key: ObjKey, last: Obj) -> Obj:
        self._pending.pop(key, None)
        final = self._server.erase(key, last)
        self._removed.append((key, final))
        if not self._collecting:
            # Cascades run here, not recursively: deep ownership chains must not overflow the stack.
            self._collecting = True
            try:
                while self._removed:
                    self._collect(*self._removed.popleft())
            finally:
                self._collecting = False
        return final

    def _collect(self, removed_key: ObjKey, removed: Obj) -> None:
        store = self._server.store
        meta = removed["metadata"]
        uid = meta.get("uid")
        if removed_key[0] == res_key(NAMESPACES):
            for key in store.keys_in_namespace(meta["name"]):
                self._delete_if_present(key)
        if not uid:
            return
        for key in store.dependents(uid):
            dependent = store.get(key)
            if dependent is None:
                continue
            refs = dependent["metadata"].get("ownerReferences") or []
            if any(store.exists_uid(ref.get("uid", "")) for ref in refs if ref.get("uid") != uid):
                self._drop_reference(key, uid)
            else:
                self._delete_if_present(key)

    def _drop_reference(self, key: ObjKey, owner_uid: str) -> None:
        store = self._server.store
        dependent = store.get(key)
        if dependent is None:
            return
        orphaned = json_copy(dependent)
        refs = dependent["metadata"].get("ownerReferences") or []
        remaining = [ref for ref in refs if ref.get("uid") != owner_uid]
        if remaining:
            orphaned["metadata"]["ownerReferences"] = remaining
        else:
            del orphaned["metadata"]["ownerReferences"]  # as the server's JSON: an empty list is left out
        self._server.write(store.resource(key[0]), key, orphaned, dependent)

    def _delete_if_present(self, key: ObjKey) -> None:
        if self._server.store.get(key) is not None:
            self.delete(self._server.store.resource(key[0]), key, None)
