"""The heartbeat of a client-mode driver: a Lease it renews while it runs, so its leftovers can be told.

A driver outside the cluster (no ``spark.kubernetes.driver.pod.name``) owns nothing that Kubernetes
could garbage-collect: when it dies by SIGKILL, its executor pods stay. So the backend keeps a
``coordination.k8s.io/v1`` Lease named after the application id, created before the first executor
pod, renewed every third of its duration and deleted at stop. Executor pods and the executor ConfigMap
name it (``k8s-backend.io/heartbeat-lease``); ``k8s-backend gc`` deletes the objects of an application
whose Lease expired or is gone. Unless executors are kept at stop, the Lease also owns their ConfigMap,
and the pods when the backend creates them itself (the direct allocator): its delete, just before the
executor pods' own at stop, has the garbage collector take whatever stop() could not delete before the
driver exited.

Each renewal also writes which executors are registered with the driver, and since when
(``k8s-backend.io/registered-executors``), so that ``k8s-backend status`` can show it for a driver it
cannot ask, and, once :attr:`DriverHeartbeat.activity` is set, its recent targets and markers for
``status --timeline`` (:mod:`k8s_backend.kube.activity`): both ride on the renewal's patch and cost no
request of their own.

A failed renewal is only logged: the next tick tries again, and the Lease has two more ticks before
it expires. Creating it at start is not optional, though: executors that point at a Lease that was
never created would look orphaned to ``gc``.

When the Lease owns the executor ConfigMap (:meth:`DriverHeartbeat.own_config_map`) and is deleted while
the application runs (a bad cleanup), the garbage collector takes the ConfigMap with it, and the executor
pods the Lease owns. The renewal that finds the Lease gone creates both again, the ConfigMap owned by the
new Lease. Executor pods created in between name the deleted Lease: a real collector takes them too (the
in-memory API does not collect a dependent whose owner was gone before it), and the allocator replaces
them. On the normal
path this costs no request: the renewal only compares the Lease's uid with the one the ConfigMap names.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping

from k8s_backend.common import Cancellable, Clock, Scheduler
from k8s_backend.kube.activity import ACTIVITY_ANNOTATION
from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.leases import (
    REGISTERED_EXECUTORS_ANNOTATION,
    heartbeat_lease,
    lease_seconds,
    micro_time,
    registered_executors_annotation,
)
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    LEASES,
    ApiError,
    ConflictError,
    KubernetesApi,
    NotFoundError,
    Obj,
)
from k8s_backend.pods.objects import items, owner_reference, section
from k8s_backend.pods.step import BaseFeatureStep, SparkPod, StepContext

log = logging.getLogger(__name__)

RENEWALS_PER_DURATION = 3  # renewed every leaseDuration/3: two renewals may fail before it expires
# Renewals that try to create the executor ConfigMap again after the Lease was: the collector takes the
# old one within seconds, so three renewals (a minute by default) outwait it.
CONFIG_MAP_CHECKS = 3


def default_holder() -> str:
    """``<host name>/<pid>``: who holds the Lease, for a human reading it."""
    return f"{socket.gethostname()}/{os.getpid()}"


class HeartbeatAnnotationStep(BaseFeatureStep):
    """The pod feature step the composition root adds when a heartbeat runs: each executor pod names
    its driver's Lease (``k8s-backend.io/heartbeat-lease``), over any template or user annotation.

    Once :attr:`owner` is set, each pod is also owned by the Lease as the server last answered it, so
    that the Lease's delete at stop has the garbage collector delete whatever pods the backend's own
    delete left (at 10,000 pods the collection delete outlasts the request timeout, and a driver that
    exits right after stop() takes its retries with it)."""

    def __init__(self, lease_name: str) -> None:
        self.lease_name = lease_name
        self.owner: DriverHeartbeat | None = None

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        pod = pod.copy()
        metadata = section(pod.pod, "metadata")
        section(metadata, "annotations")[HEARTBEAT_LEASE_ANNOTATION] = self.lease_name
        reference = None if self.owner is None else self.owner.pod_owner_reference()
        if reference is not None:
            refs = items(metadata, "ownerReferences")
            refs[:] = [ref for ref in refs if ref.get("uid") != reference["uid"]]
            refs.append(reference)
        return pod


class DriverHeartbeat:
    """Creates, renews and deletes one application's heartbeat Lease on the backend's scheduler."""

    def __init__(
        self,
        api: KubernetesApi,
        scheduler: Scheduler,
        clock: Clock,
        *,
        namespace: str,
        app_id: str,
        lease_name: str,
        duration: float,
        holder: str,
        registered: Callable[[], Mapping[str, float]] | None = None,
        keeps_executors: bool = False,
    ) -> None:
        """``duration``: the Lease's ``leaseDurationSeconds`` (rounded up to whole seconds);
        ``registered``: the executors registered with the driver (id to registration time), if known;
        ``keeps_executors``: executors are kept at stop (``deleteOnTermination=false``), so the Lease's
        delete orphans its dependents. This driver makes none, but pods adopted from an earlier driver
        of the same application id that deleted its executors are owned by this same Lease (taken over,
        so its uid is theirs): a plain delete would have the garbage collector take them."""
        self._api = api
        self._scheduler = scheduler
        self._clock = clock
        self._namespace = namespace
        self._app_id = app_id
        self.lease_name = lease_name
        self._keeps_executors = keeps_executors
        self._duration = lease_seconds(duration)
        self._holder = holder
        self._registered = registered
        # The executor-activity annotation's value (k8s_backend.kube.activity), set by the composition
        # root once the parts that know it exist; None: not written.
        self.activity: Callable[[], str] | None = None
        self._lock = threading.Lock()
        self._task: Cancellable | None = None
        self._stopped = False
        self.renewals = 0
        self.failed_renewals = 0
        self.lease: Obj | None = None  # as the server last answered (its uid owns the executor ConfigMap)
        self.owns_config_map = False  # the ConfigMap names the Lease as owner: deleting the Lease collects it
        self._config_map: Obj | None = None  # its body without owner, to create it again
        self._config_map_owner: str | None = None  # the Lease uid it is owned by, as last made sure
        self._config_map_checks = 0  # creates left to try for that Lease while the old one lingers

    @property
    def interval(self) -> float:
        """Seconds between renewals."""
        return self._duration / RENEWALS_PER_DURATION

    def start(self) -> None:
        """Create (or take over) the Lease, then renew it on the scheduler. Raises if it cannot be created."""
        self._acquire()
        with self._lock:
            if self._stopped or self._task is not None:
                return
            self._task = self._scheduler.schedule_with_fixed_delay(self.interval, self.interval, self.renew)
        log.info(
            "Heartbeat lease %s/%s created (renewed every %.0fs)",
            self._namespace,
            self.lease_name,
            self.interval,
        )

    def own_config_map(self, config_map: Obj) -> Obj:
        """The executor ConfigMap with the Lease (created by :meth:`start`) as its owner, so that the Lease's
        delete at stop collects it; unchanged if the Lease has no uid. The body is kept: a renewal that
        finds the Lease replaced (deleted, so the ConfigMap collected) creates the ConfigMap again."""
        with self._lock:
            lease = self.lease
            uid = _uid(lease)
            if lease is None or uid is None:
                return config_map
            self.owns_config_map = True
            self._config_map = config_map
            self._config_map_owner = uid
            return _owned_by(config_map, lease)

    def pod_owner_reference(self) -> Obj | None:
        """An owner reference to the Lease for an executor pod (None before :meth:`start`): not a
        controller one, which a pod template may hold already, and the collector needs none."""
        lease = self.lease  # one read, no lock: a renewal holds the lock through its request
        if _uid(lease) is None:
            return None
        reference = owner_reference(lease or {})
        del reference["controller"]
        return reference

    def _acquire(self) -> None:
        now = self._clock.now()
        body = heartbeat_lease(
            self.lease_name,
            self._namespace,
            self._app_id,
            holder=self._holder,
            duration=self._duration,
            now=now,
        )
        try:
            self.lease = self._api.create(LEASES, self._namespace, body)
        except ConflictError:
            # An earlier driver of the same application id (whose pods recovery may adopt) left it.
            self.lease = self._api.patch(LEASES, self._namespace, self.lease_name, {"spec": body["spec"]})

    def renew(self) -> None:
        """Move ``renewTime`` to now; recreate the Lease if it is gone. Failures are logged, never raised."""
        # Under the lock, so that a renewal racing stop() cannot create the Lease again after delete().
        with self._lock:
            if self._stopped:
                return
            self._renew_locked()

    def _renew_locked(self) -> None:
        try:
            try:
                self.lease = self._api.patch(LEASES, self._namespace, self.lease_name, self._renewal())
            except NotFoundError:
                log.warning(
                    "Heartbeat lease %s/%s was deleted: creating it again", self._namespace, self.lease_name
                )
                self._acquire()
        except ApiError as error:
            self.failed_renewals += 1
            log.warning(
                "Could not renew heartbeat lease %s/%s (retried in %.0fs): %s",
                self._namespace,
                self.lease_name,
                self.interval,
                error,
            )
            return
        self.renewals += 1
        try:
            self._keep_config_map()
        except ApiError as error:
            log.warning(
                "Could not create executor ConfigMap %s/%s again for the new heartbeat lease "
                "(retried in %.0fs): %s",
                self._namespace,
                _name(self._config_map),
                self.interval,
                error,
            )

    def _keep_config_map(self) -> None:
        """Make sure the ConfigMap the Lease owns exists while the Lease is the one it is now (its uid
        changes when it is created again). No request while the uid is the one last made sure of."""
        lease, body = self.lease, self._config_map
        uid = _uid(lease)
        if lease is None or body is None or uid is None:
            return
        if self._config_map_owner != uid:
            self._config_map_owner, self._config_map_checks = uid, CONFIG_MAP_CHECKS
        if self._config_map_checks == 0:
            return
        self._config_map_checks -= 1
        try:
            self._api.create(CONFIG_MAPS, self._namespace, _owned_by(body, lease))
        except ConflictError:
            # The old one, not collected yet: the collector deletes a dependent of a gone owner in the
            # background. Look again at the next renewals (create only, which the driver's Role grants).
            return
        self._config_map_checks = 0
        log.warning(
            "Executor ConfigMap %s/%s was collected with the deleted heartbeat lease: created it again",
            self._namespace,
            _name(body),
        )

    def _renewal(self) -> Obj:
        renewal: Obj = {
            "spec": {
                "holderIdentity": self._holder,
                "leaseDurationSeconds": self._duration,
                "renewTime": micro_time(self._clock.now()),
            }
        }
        annotations: dict[str, str] = {}
        if self._registered is not None:
            try:
                registered = self._registered()
            except Exception:  # the driver may be going away: the renewal matters more
                log.debug("Could not read the driver's registered executors", exc_info=True)
            else:
                annotations[REGISTERED_EXECUTORS_ANNOTATION] = registered_executors_annotation(registered)
        if self.activity is not None:
            try:
                annotations[ACTIVITY_ANNOTATION] = self.activity()
            except Exception:  # as above: the renewal matters more
                log.debug("Could not read the driver's executor activity", exc_info=True)
        if annotations:
            renewal["metadata"] = {"annotations": annotations}
        return renewal

    def stop(self) -> None:
        """Stop renewing (idempotent)."""
        with self._lock:
            self._stopped = True
            task, self._task = self._task, None
        if task is not None:
            task.cancel()

    def collects_config_map(self) -> bool:
        """True when the executor ConfigMap names the Lease as owner: deleting the Lease collects it."""
        return self.owns_config_map

    def delete(self) -> None:
        """Stop renewing and delete the Lease (gone already is fine); API errors are raised, to be retried."""
        self.stop()
        try:
            self._api.delete(LEASES, self._namespace, self.lease_name, orphan=self._keeps_executors)
        except NotFoundError:
            return
        log.info("Heartbeat lease %s/%s deleted", self._namespace, self.lease_name)


def _uid(obj: Obj | None) -> str | None:
    uid = ((obj or {}).get("metadata") or {}).get("uid")
    return str(uid) if uid else None


def _name(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name"))


def _owned_by(obj: Obj, owner: Obj) -> Obj:
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "ownerReferences": [owner_reference(owner)]}}
