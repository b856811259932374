"""Creating one executor pod and its claims through the Kubernetes port (the allocator's I/O for upscaling).

Nothing here raises an :class:`ApiError`: a refused call is logged and reported as a failed creation,
so one error never aborts an allocation round.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import Protocol

import attrs

from k8s_backend.allocation.pvcs import PvcReusePolicy, reusable_pvcs, reuse_claims
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.common import Clock
from k8s_backend.conf.model import ResourceProfile
from k8s_backend.kube.flow_control import FlowControl
from k8s_backend.kube.labels import app_selector
from k8s_backend.kube.port import PODS, PVCS, ApiError, ConflictError, KubernetesApi, Obj
from k8s_backend.kube.retry import should_retry
from k8s_backend.pods.constants import (
    EXECUTOR_ROLE,
    SPARK_APP_ID_LABEL,
    SPARK_EXECUTOR_ID_LABEL,
    SPARK_ROLE_LABEL,
)
from k8s_backend.pods.objects import owner_reference
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.snapshots.states import ExecutorPodState, PodPhase

log = logging.getLogger(__name__)

# Put on every claim we create: on a 409 it tells a claim an earlier attempt of ours made for this
# executor from one that another executor (or application) made under the same name.
CLAIM_EXECUTOR_ANNOTATION = "k8s-backend.io/created-for-executor"


class PodSpecBuilder(Protocol):
    """What the allocator needs from :class:`k8s_backend.pods.builder.ExecutorPodBuilder`."""

    def build(self, request: ExecutorPodRequest) -> ExecutorPodSpec: ...


def guarded(what: str, call: Callable[[], object]) -> bool:
    """Run one API call; log an :class:`ApiError` as "Cannot <what>" and return whether it worked."""
    try:
        call()
    except ApiError as error:
        log.warning("Cannot %s: %s", what, error)
        return False
    return True


@attrs.frozen
class Creation:
    """What became of one executor's create: the pod exists, or ``error`` says why not.

    ``retryable``: the API refused with a transient error (429, 5xx, connection error or timeout, once
    the adapter's own retries were spent): an outage, not an executor failure; ask again later, not
    before ``retry_after`` seconds when the server said so (``flow_control``: the API Priority and
    Fairness class that refused it, when the server named it). ``reuse_id``: the pod itself may exist (a
    timed-out create can have reached the server), so ask again under the same executor id: a 409 then
    finds the pod and adopts it.
    """

    created: bool
    error: str = ""  # for the executor history and status; empty when the cause was only logged
    retryable: bool = False
    reuse_id: bool = False
    retry_after: float | None = None
    resource_version: int | None = None  # the created (or adopted) pod's, when ``created``
    status: int = 0  # the refusal's HTTP status (0: none, e.g. a timeout)
    flow_control: FlowControl | None = None


CREATED = Creation(True)


def _failed(error: str = "") -> Creation:
    return Creation(False, error)


def _transient(error: ApiError, *, reuse_id: bool) -> Creation:
    return Creation(
        False,
        str(error),
        retryable=True,
        reuse_id=reuse_id,
        retry_after=error.retry_after,
        status=error.status or 0,
        flow_control=error.flow_control,
    )


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


class ExecutorPodCreator:
    """Builds and creates executor pods, reusing or creating their on-demand claims."""

    def __init__(
        self,
        api: KubernetesApi,
        builder: PodSpecBuilder,
        clock: Clock,
        *,
        namespace: str,
        pvc_policy: PvcReusePolicy,
        identity: AllocatorIdentity,
    ) -> None:
        self._api = api
        self._builder = builder
        self._clock = clock
        self._namespace = namespace
        self._pvc_policy = pvc_policy
        self._identity = identity
        self._app_id = identity.app_id
        self._driver_pod = identity.driver_pod
        self._lock = threading.Lock()
        self._pvc_counter = 0

    @property
    def pvc_counter(self) -> int:
        """How many claims were created (Spark's PVC_COUNTER)."""
        with self._lock:
            return self._pvc_counter

    def reusable_pvcs(self, pvcs_in_use: Collection[str]) -> list[Obj]:
        """This application's claims a new pod may take over; empty when they cannot be listed."""
        if not self._pvc_policy.lists_pvcs(self._driver_pod is not None):
            return []
        try:
            listed = self._api.list(PVCS, self._namespace, label_selector=app_selector(self._app_id)).items
        except ApiError as error:
            log.info("Cannot list PVC resources. Please check account permissions. (%s)", error)
            return []
        reusable = reusable_pvcs(listed, pvcs_in_use, self._clock.now(), self._pvc_policy.batch_delay)
        log.info("Found %d reusable PVCs from %d PVCs", len(reusable), len(listed))
        return reusable

    def must_wait_for_pvc(self, reusable: list[Obj]) -> bool:
        """PVC-oriented allocation with every claim created and none free: create no pod now."""
        counter = self.pvc_counter
        if self._pvc_policy.must_wait(len(reusable), counter):
            log.info("Wait to reuse one of the existing %d PVCs.", counter)
            return True
        return False

    def create(self, executor_id: int, profile: ResourceProfile, reusable: list[Obj]) -> Creation:
        """Create the executor's pod and claims; not ``created`` if the pod does not exist afterwards.

        Claims taken from ``reusable`` are removed from it.
        """
        identity = self._identity
        try:
            spec = self._builder.build(
                ExecutorPodRequest(
                    executor_id=executor_id,
                    app_id=identity.app_id,
                    driver_url=identity.driver_url,
                    pod_name_prefix=identity.pod_name_prefix,
                    resource_profile=profile,
                    driver_pod=identity.driver_pod,
                    config_map_name=identity.config_map_name,
                    auth_secret_name=identity.auth_secret_name,
                )
            )
        except Exception as error:  # a builder bug or bad template must not kill the allocation thread
            log.exception("Cannot build the pod of executor %d", executor_id)
            return _failed(f"cannot build the pod: {error}")
        claims = reuse_claims(spec.pod, spec.pvcs, reusable)
        created = self._create_pod(executor_id, claims.pod)
        if isinstance(created, Creation):
            return created
        creation = self._create_claims(executor_id, created, claims.pvcs_to_create)
        if not creation.created:
            return creation
        # Parsed as the snapshot store parses the versions it compares.
        version = ExecutorPodState(executor_id, PodPhase.PENDING, created).resource_version
        return attrs.evolve(creation, resource_version=version)

    def _create_pod(self, executor_id: int, pod: Obj) -> Obj | Creation:
        """The created (or adopted) pod, or the failed creation."""
        try:
            return self._api.create(PODS, self._namespace, pod)
        except ConflictError as conflict:
            return self._adopt_existing(executor_id, pod, conflict)
        except ApiError as error:
            if should_retry(error):
                # The allocator logs the outage once; a line per create would flood the log.
                log.debug("Cannot create the pod of executor %d for now: %s", executor_id, error)
                return _transient(error, reuse_id=True)
            log.warning("Cannot create the pod of executor %d: %s", executor_id, error)
            return _failed(str(error))

    def _adopt_existing(self, executor_id: int, pod: Obj, conflict: ConflictError) -> Obj | Creation:
        # Ids are never reused, so a pod of this app with this id exists only because an earlier
        # attempt of this very create reached the server before the adapter retried: it is ours.
        name = _name(pod)
        try:
            existing = self._api.get(PODS, self._namespace, name)
        except ApiError as error:
            if should_retry(error):
                log.debug("Cannot read pod %s of executor %d for now: %s", name, executor_id, error)
                return _transient(error, reuse_id=True)
            log.warning("Cannot create the pod of executor %d: %s (then: %s)", executor_id, conflict, error)
            return _failed()
        labels = (existing.get("metadata") or {}).get("labels") or {}
        ours = (
            labels.get(SPARK_APP_ID_LABEL) == self._app_id
            and labels.get(SPARK_ROLE_LABEL) == EXECUTOR_ROLE
            and labels.get(SPARK_EXECUTOR_ID_LABEL) == str(executor_id)
        )
        if ours:
            log.info(
                "Pod %s of executor %d already exists: an earlier attempt created it.", name, executor_id
            )
            return existing
        log.warning(
            "Cannot create the pod of executor %d: %s belongs to something else (%s)",
            executor_id,
            name,
            conflict,
        )
        return _failed()

    def _create_claims(self, executor_id: int, pod: Obj, pvcs: tuple[Obj, ...]) -> Creation:
        # The driver owns claims it may reuse; otherwise a claim goes with its pod.
        owner = self._driver_pod if (self._pvc_policy.own_pvc and self._driver_pod is not None) else pod
        for claim in pvcs:
            metadata = dict(claim.get("metadata") or {})
            metadata["ownerReferences"] = [owner_reference(owner)]
            metadata["annotations"] = {
                **(metadata.get("annotations") or {}),
                CLAIM_EXECUTOR_ANNOTATION: str(executor_id),
            }
            pvc = {**claim, "metadata": metadata}
            name = str(metadata.get("name", ""))
            log.info(
                "Trying to create PersistentVolumeClaim %s with StorageClass %s",
                name,
                (pvc.get("spec") or {}).get("storageClassName"),
            )
            try:
                self._api.create(PVCS, self._namespace, pvc)
            except ConflictError as conflict:
                refused = self._claim_conflict(executor_id, name, conflict)
                if refused is not None:
                    self._take_back(pod)
                    return refused
            except ApiError as error:
                log.warning(
                    "Cannot create PersistentVolumeClaim %s of executor %d: %s", name, executor_id, error
                )
                self._take_back(pod)
                if should_retry(error):
                    # Not under the same id: the pod taken back may still be terminating under its name.
                    return _transient(error, reuse_id=False)
                return _failed(f"cannot create PersistentVolumeClaim {name}: {error}")
            with self._lock:
                self._pvc_counter += 1
        return CREATED

    def _claim_conflict(self, executor_id: int, name: str, conflict: ConflictError) -> Creation | None:
        """None when the existing claim ``name`` is one an earlier attempt made for this executor; else the
        failed creation.

        The adapter may retry a create whose first attempt reached the server; such a claim carries
        this application's label and this executor's annotation. Anything else is another executor's
        (or application's) claim, and mounting it too would make two pods share one claim.
        """
        try:
            existing = self._api.get(PVCS, self._namespace, name)
        except ApiError as error:
            log.warning(
                "Cannot create PersistentVolumeClaim %s of executor %d: %s (then: %s)",
                name,
                executor_id,
                conflict,
                error,
            )
            return _failed(f"PersistentVolumeClaim {name} already exists and cannot be read: {error}")
        metadata = existing.get("metadata") or {}
        app = (metadata.get("labels") or {}).get(SPARK_APP_ID_LABEL)
        made_for = (metadata.get("annotations") or {}).get(CLAIM_EXECUTOR_ANNOTATION)
        if app == self._app_id and made_for == str(executor_id):
            log.info(
                "PersistentVolumeClaim %s of executor %d already exists: an earlier attempt created it.",
                name,
                executor_id,
            )
            return None
        owner = self._describe_claim_owner(app, made_for)
        log.error(
            "Cannot create the PersistentVolumeClaim %s of executor %d: it already exists and belongs to %s. "
            "Likely cause: a fixed claimName in spark.kubernetes.executor.volumes.persistentVolumeClaim.*."
            "options.claimName with storageClass and sizeLimit while more than one executor runs "
            "(SPARK-39006); use claimName=OnDemand or put SPARK_EXECUTOR_ID in the claim name. "
            "Deleting the executor's pod.",
            name,
            executor_id,
            owner,
        )
        return _failed(
            f"PersistentVolumeClaim {name} already exists and belongs to {owner}, not to executor "
            f"{executor_id}"
        )

    def _describe_claim_owner(self, app: str | None, made_for: str | None) -> str:
        if app != self._app_id:
            return f"application {app}" if app else f"no Spark application (no {SPARK_APP_ID_LABEL} label)"
        if made_for is None:
            return "this application, but no executor is recorded on it"
        return f"executor {made_for} of this application"

    def _take_back(self, pod: Obj) -> None:
        # A pod without its claim never starts: delete it (Spark's rollback).
        name = _name(pod)
        guarded(
            f"delete pod {name} after its claim failed", lambda: self._api.delete(PODS, self._namespace, name)
        )
