"""The ``statefulset`` and ``deployment`` allocators: executor pods made by a controller.

Counterpart of Spark's StatefulSetPodsAllocator and DeploymentPodsAllocator. Each profile's target
becomes the replicas of one StatefulSet or Deployment (owned by the driver pod when there is one);
kube-controller-manager's StatefulSet or ReplicaSet controller creates and removes the pods, which
start with the executor id ``EXECID``.

Executor ids: under Spark, each executor asks the driver (GenerateExecID) and the driver labels its
pod. With ``name_executors`` this component plays that labelling part instead: every ``interval`` it
gives each ``EXECID`` pod the next id from its counter, with a JSON patch that applies only while the
label is still ``EXECID``. That is right only where no executor asks a driver for its id (the backend
used without a driver); with a driver, the bridge's driver endpoint answers each executor's
GenerateExecID through :meth:`generate_executor_id`, which labels the pod as Spark's driver does.

Scaling down a Deployment: :meth:`mark_for_removal` gives the pods Spark removes the configured
``controller.kubernetes.io/pod-deletion-cost`` (the template's is "0"), and a scale-down waits one
``interval`` so that the marks made right after the target dropped (Spark lowers the target, then kills)
land first: the ReplicaSet controller then removes the marked pods. A StatefulSet removes its highest
ordinals. A controller that never observes an owner within ``controller_timeout`` (an API server
without kube-controller-manager, such as ``pyk8s://local``) fails the application, naming the fix.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from k8s_backend.allocation.creator import PodSpecBuilder, guarded
from k8s_backend.allocation.owner_objects import (
    ALLOCATOR_KEY,
    OwnerKind,
    deletion_cost_patch,
    executor_id_patch,
    executor_label_patch,
    owner_object,
    scale_patch,
)
from k8s_backend.allocation.owner_scaling import (
    CreateOwner,
    OwnerAction,
    assign_ids,
    highest_id,
    is_scale_down,
    observed,
    plan_owners,
    pods_to_mark,
    unresolved_pods,
)
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.common import Cancellable, Clock, Scheduler
from k8s_backend.common.failure_sink import FailureReporter
from k8s_backend.conf.model import DEFAULT_PROFILE_ID, ResourceProfile
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import EXECUTOR_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL
from k8s_backend.kube.port import JSON_PATCH, PODS, ApiError, ConflictError, KubernetesApi, Obj
from k8s_backend.pods.objects import owner_reference
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.snapshots.states import UNRESOLVED_EXECUTOR_ID

log = logging.getLogger(__name__)

CONTROLLER_TIMEOUT = 60.0  # seconds for kube-controller-manager to observe a new owner object


@attrs.frozen
class OwnerSettings:
    """How the allocator acts, from the configuration."""

    kind: OwnerKind
    namespace: str
    default_profile: ResourceProfile
    interval: float = 1.0  # spark.kubernetes.allocation.batch.delay: the id and controller checks
    deletion_cost: int | None = None  # spark.kubernetes.executor.podDeletionCost
    name_executors: bool = True  # label EXECID pods here (no driver answers GenerateExecID)
    controller_timeout: float = CONTROLLER_TIMEOUT


class OwnerPodsAllocator:
    """Keeps each profile's StatefulSet or Deployment at its target and names its executors.

    Thread model: every API call runs on the injected scheduler's threads, serialised by one lock;
    the public methods may be called from any thread.
    """

    def __init__(
        self,
        settings: OwnerSettings,
        identity: AllocatorIdentity,
        api: KubernetesApi,
        builder: PodSpecBuilder,
        scheduler: Scheduler,
        clock: Clock,
        *,
        failures: FailureReporter | None = None,
    ) -> None:
        self._settings, self._identity, self._api, self._builder = settings, identity, api, builder
        self._scheduler, self._clock, self._failures = scheduler, clock, failures
        self._kind, self._namespace = settings.kind, settings.namespace
        self._profiles: dict[int, ResourceProfile] = {DEFAULT_PROFILE_ID: settings.default_profile}
        self._targets: dict[int, int] = {}
        self._replicas: dict[int, int] = {}  # what each existing owner was last set to
        self._unobserved: dict[int, float] = {}  # owners no controller has seen yet: when created
        self._last_id = 0
        self._lock = threading.RLock()
        self._task: Cancellable | None = None
        self._stopped = False
        self._down_scheduled = False  # a Deployment's scale-down waits (see _apply_targets)

    @property
    def kind(self) -> OwnerKind:
        return self._kind

    @property
    def identity(self) -> AllocatorIdentity:
        return self._identity

    @property
    def builder(self) -> PodSpecBuilder:
        return self._builder

    # -- the PodsAllocator surface -------------------------------------------------------------------

    def start(self) -> None:
        """Start the periodic work: executor ids, and the check that a controller observes the owners."""
        if self._task is None:
            self._task = self._scheduler.schedule_with_fixed_delay(0.0, self._settings.interval, self._tick)

    def halt(self) -> None:
        """Stop creating, scaling and naming; the owner objects stay until :meth:`delete_owned`."""
        with self._lock:
            self._stopped = True
            task, self._task = self._task, None
        if task is not None:
            task.cancel()

    def stop(self) -> None:
        """Halt, then delete the owner objects (Spark's stop(appId))."""
        self.halt()
        self.delete_owned()

    def delete_owned(self) -> None:
        """Delete each owner object created (or taken over); the garbage collector takes its pods."""
        with self._lock:
            for rp_id in sorted(self._replicas):
                name = self._name(rp_id)
                delete = functools.partial(self._api.delete, self._kind.resource, self._namespace, name)
                guarded(f"delete {self._kind.resource.kind} {name}", delete)
            self._replicas.clear()
            self._unobserved.clear()

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        with self._lock:
            self._profiles[profile.id] = profile

    def set_total_expected_executors(
        self, targets: Mapping[int, int], profiles: Mapping[int, ResourceProfile] | None = None
    ) -> None:
        """Create or scale each profile's owner object to its target (Spark does not wait either)."""
        with self._lock:
            self._profiles.update(profiles or {})
            self._targets.update(targets)
        self._scheduler.submit(functools.partial(self._apply_targets, False))

    def mark_for_removal(self, executor_ids: Collection[int]) -> None:
        """Give the executors' pods the configured deletion cost (Deployment only; a no-op otherwise)."""
        cost = self._settings.deletion_cost
        if self._kind is OwnerKind.DEPLOYMENT and cost is not None and executor_ids:
            self._scheduler.submit(functools.partial(self._mark_now, frozenset(executor_ids), cost))

    def generate_executor_id(self, pod_name: str) -> int:
        """Spark's GenerateExecID: the next id for the executor of ``pod_name``, whose pod is labelled
        with it (asynchronously, as Spark's driver does)."""
        with self._lock:
            self._last_id += 1
            executor_id = self._last_id
        self._scheduler.submit(functools.partial(self._label_guarded, pod_name, executor_id))
        return executor_id

    def profile(self, rp_id: int) -> ResourceProfile | None:
        with self._lock:
            return self._profiles.get(rp_id)

    def is_deleted(self, executor_id: int) -> bool:
        """Always false, as Spark's: the controller, not the allocator, deletes the pods."""
        return False

    @property
    def outstanding_pods(self) -> int:
        """Always 0: pending pods are the controller's business, not counted against new requests."""
        return 0

    @property
    def pvc_counter(self) -> int:
        """Always 0: a StatefulSet's claims come from its volume claim templates, made by its controller."""
        return 0

    def advance_executor_id_counter(self, min_next: int) -> None:
        with self._lock:
            self._last_id = max(self._last_id, min_next - 1)

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "allocator": self._kind.value,
                "targets": dict(self._targets),
                "replicas": dict(self._replicas),
                "unobserved": sorted(self._unobserved),
                "executor_id_counter": self._last_id,
                "newly_created": [],
                "stopped": self._stopped,
            }

    # -- the work ------------------------------------------------------------------------------------

    def _tick(self) -> None:
        with self._lock:
            if self._stopped:
                return
            if self._settings.name_executors:
                self._resolve_ids()
            self._check_controllers()
        self._apply_targets(False)  # again what failed before (a create or scale the API refused)

    def _resolve_ids(self) -> None:
        """Label each pod still waiting for an id with the next one (the GenerateExecID label patch)."""
        pods = self._executor_pods("name")
        if pods is None:  # the next tick tries again
            return
        # Ids never repeat, also across a restart that took over the owner objects.
        self._last_id = max(self._last_id, highest_id(pods))
        for name, executor_id in assign_ids(unresolved_pods(pods), self._last_id):
            patch = functools.partial(self._label, name, executor_id)
            if not guarded(f"give pod {name} executor id {executor_id}", patch):
                break  # the ids after it would not be consecutive; the next tick goes on
            self._last_id = executor_id

    def _label_guarded(self, pod_name: str, executor_id: int) -> None:
        patch = functools.partial(
            self._api.patch, PODS, self._namespace, pod_name, executor_label_patch(executor_id)
        )
        guarded(f"label pod {pod_name} with executor id {executor_id}", patch)

    def _label(self, pod_name: str, executor_id: int) -> None:
        self._api.patch(
            PODS, self._namespace, pod_name, executor_id_patch(executor_id), patch_type=JSON_PATCH
        )

    def _check_controllers(self) -> None:
        for rp_id, created in sorted(self._unobserved.items()):
            name = self._name(rp_id)
            try:
                seen = observed(self._api.get(self._kind.resource, self._namespace, name))
            except ApiError as error:
                log.warning("Cannot read %s %s: %s", self._kind.resource.kind, name, error)
                continue
            if seen:
                del self._unobserved[rp_id]
            elif self._clock.now() - created > self._settings.controller_timeout:
                del self._unobserved[rp_id]
                self._no_controller(name)

    def _no_controller(self, name: str) -> None:
        kind = self._kind.resource.kind
        reason = (
            f"no controller observed {kind} {name} within {self._settings.controller_timeout:g} s: the API "
            f"server runs no kube-controller-manager with the {kind} controller (pyk8s://local and the "
            f"in-memory API have none), so no executor pod is made; set {ALLOCATOR_KEY}=direct"
        )
        self._report(reason)

    def _report(self, reason: str) -> None:
        log.error("%s", reason)
        if self._failures is not None:
            self._failures.report(reason)

    def _apply_targets(self, scale_down: bool) -> None:
        with self._lock:
            if self._stopped:
                return
            defer = False
            for action in plan_owners(self._targets, self._replicas):
                if (
                    self._kind is OwnerKind.DEPLOYMENT
                    and not scale_down
                    and is_scale_down(action, self._replicas)
                ):
                    defer = True  # after the marks of the executors Spark removes (see the module doc)
                    continue
                self._apply(action)
            # One deferred scale-down at a time; a failed one is deferred again by the next tick.
            schedule = defer and not self._down_scheduled
            self._down_scheduled = self._down_scheduled or schedule
        if schedule:
            self._scheduler.schedule(self._settings.interval, self._apply_deferred)

    def _apply_deferred(self) -> None:
        with self._lock:
            self._down_scheduled = False
        self._apply_targets(True)

    def _apply(self, action: OwnerAction) -> None:
        name = self._name(action.rp_id)
        if isinstance(action, CreateOwner):
            create = functools.partial(self._create, action)
            try:
                created = guarded(f"create {self._kind.resource.kind} {name}", create)
            except ConfigError as error:  # the pod template cannot be made into this kind of owner
                self._targets.pop(action.rp_id, None)
                self._report(str(error))
                return
            if created:
                self._replicas[action.rp_id] = action.replicas
                self._unobserved[action.rp_id] = self._clock.now()
            return
        scale = functools.partial(
            self._api.patch, self._kind.resource, self._namespace, name, scale_patch(action.replicas)
        )
        if guarded(f"scale {self._kind.resource.kind} {name} to {action.replicas}", scale):
            self._replicas[action.rp_id] = action.replicas

    def _create(self, action: CreateOwner) -> None:
        identity = self._identity
        built = self._builder.build(
            ExecutorPodRequest(
                executor_id=UNRESOLVED_EXECUTOR_ID,
                app_id=identity.app_id,
                driver_url=identity.driver_url,
                pod_name_prefix=identity.pod_name_prefix,
                resource_profile=self._profiles.get(action.rp_id, self._profiles[DEFAULT_PROFILE_ID]),
                driver_pod=identity.driver_pod,
                config_map_name=identity.config_map_name,
                auth_secret_name=identity.auth_secret_name,
            )
        )
        driver = identity.driver_pod
        body = owner_object(
            self._kind,
            built,
            app_id=identity.app_id,
            rp_id=action.rp_id,
            replicas=action.replicas,
            driver_owner=None if driver is None else owner_reference(driver),
        )
        try:
            self._api.create(self._kind.resource, self._namespace, body)
        except ConflictError:  # ours from before a restart: take it over at the wanted size
            name = self._name(action.rp_id)
            self._api.patch(self._kind.resource, self._namespace, name, scale_patch(action.replicas))

    def _mark_now(self, executor_ids: frozenset[int], cost: int) -> None:
        with self._lock:
            pods = self._executor_pods("mark for removal")
            for name in pods_to_mark(pods or [], executor_ids):
                mark = functools.partial(
                    self._api.patch, PODS, self._namespace, name, deletion_cost_patch(cost)
                )
                guarded(f"set the deletion cost of pod {name}", mark)

    def _executor_pods(self, why: str) -> list[Obj] | None:
        selector = f"{SPARK_APP_ID_LABEL}={self._identity.app_id},{SPARK_ROLE_LABEL}={EXECUTOR_ROLE}"
        try:
            return self._api.list(PODS, self._namespace, label_selector=selector).items
        except ApiError as error:
            log.warning("Cannot list the executor pods to %s: %s", why, error)
            return None

    def _name(self, rp_id: int) -> str:
        return self._kind.object_name(self._identity.app_id, rp_id)
