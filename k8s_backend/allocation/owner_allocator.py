"""The ``statefulset`` and ``deployment`` allocators: executor pods made by a controller.

Counterpart of Spark's StatefulSetPodsAllocator and DeploymentPodsAllocator. Each profile's target
becomes the replicas of one StatefulSet or Deployment owned by the driver pod; kube-controller-manager's
StatefulSet or ReplicaSet controller creates and removes the pods. The pods start with the executor id
``EXECID``.

Executor ids: under Spark, each executor asks the driver (GenerateExecID) and the driver labels its
pod. This component plays the driver's labelling part: every ``interval`` it gives each ``EXECID`` pod
the next id from its counter, with a JSON patch that only applies while the label is still ``EXECID``.
It is therefore only right where no executor asks a driver for its id (the backend used alone, or
executors that read their id from the label); a driver answering GenerateExecID itself is not wired.

Scaling down a Deployment: :meth:`mark_for_removal` lowers the pods' deletion cost
(``controller.kubernetes.io/pod-deletion-cost``, template value "0") before the target drops, so that
the ReplicaSet controller removes those pods first. A StatefulSet removes its highest ordinals.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

from k8s_backend.allocation.creator import PodSpecBuilder, guarded
from k8s_backend.allocation.owner_objects import (
    OwnerKind,
    deletion_cost_patch,
    executor_id_patch,
    owner_object,
    scale_patch,
    selector_labels,
)
from k8s_backend.allocation.owner_scaling import (
    CreateOwner,
    OwnerAction,
    assign_ids,
    highest_id,
    plan_owners,
    pods_to_mark,
    unresolved_pods,
)
from k8s_backend.allocation.settings import AllocatorIdentity
from k8s_backend.common import Cancellable, Scheduler
from k8s_backend.conf.model import DEFAULT_PROFILE_ID, ResourceProfile
from k8s_backend.kube.labels import EXECUTOR_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL
from k8s_backend.kube.port import JSON_PATCH, PODS, ApiError, ConflictError, KubernetesApi, Obj
from k8s_backend.pods.objects import owner_reference
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.snapshots.states import UNRESOLVED_EXECUTOR_ID

log = logging.getLogger(__name__)


class OwnerPodsAllocator:
    """Keeps each profile's StatefulSet or Deployment at its target and names its executors.

    Thread model: every API call runs on the injected scheduler's threads, serialised by one lock;
    the public methods may be called from any thread.
    """

    def __init__(
        self,
        kind: OwnerKind,
        identity: AllocatorIdentity,
        api: KubernetesApi,
        builder: PodSpecBuilder,
        scheduler: Scheduler,
        *,
        namespace: str,
        default_profile: ResourceProfile,
        interval: float = 1.0,
        deletion_cost: int | None = None,
    ) -> None:
        self._kind, self._identity, self._api, self._builder = kind, identity, api, builder
        self._scheduler, self._namespace, self._interval = scheduler, namespace, interval
        self._deletion_cost = deletion_cost
        self._profiles: dict[int, ResourceProfile] = {DEFAULT_PROFILE_ID: default_profile}
        self._replicas: dict[int, int] = {}  # what each existing owner was last set to
        self._last_id = 0
        self._lock = threading.Lock()
        self._task: Cancellable | None = None
        self._stopped = False

    @property
    def kind(self) -> OwnerKind:
        return self._kind

    @property
    def identity(self) -> AllocatorIdentity:
        return self._identity

    @property
    def builder(self) -> PodSpecBuilder:
        return self._builder

    def start(self) -> None:
        """Start naming the executors that wait for an id."""
        self._task = self._scheduler.schedule_with_fixed_delay(0.0, self._interval, self.resolve_ids)

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        with self._lock:
            self._profiles.setdefault(profile.id, profile)

    def set_total_expected_executors(self, targets: Mapping[int, int]) -> None:
        """Create or scale each profile's owner object to its target (Spark does not wait either)."""
        wanted = dict(targets)
        self._scheduler.submit(lambda: self._apply_targets(wanted))

    def mark_for_removal(self, executor_ids: Collection[int]) -> None:
        """Give the executors' pods the configured deletion cost (Deployment only; a no-op otherwise)."""
        cost = self._deletion_cost
        if self._kind is OwnerKind.DEPLOYMENT and cost is not None and executor_ids:
            ids = frozenset(executor_ids)
            self._scheduler.submit(lambda: self._mark_now(ids, cost))

    def stop(self) -> None:
        """Stop naming executors and delete the owner objects (the garbage collector takes the pods)."""
        if self._task is not None:
            self._task.cancel()
        with self._lock:
            self._stopped = True
            for rp_id in sorted(self._replicas):
                name = self._name(rp_id)
                guarded(f"delete {self._kind.resource.kind} {name}", functools.partial(self._delete, name))
            self._replicas.clear()

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"kind": self._kind.value, "replicas": dict(self._replicas), "last_id": self._last_id}

    def resolve_ids(self) -> None:
        """Label each pod still waiting for an id with the next one (the GenerateExecID label patch)."""
        with self._lock:
            if self._stopped:
                return
            pods = self._executor_pods("name")
            if pods is None:  # the next tick tries again
                return
            # Ids never repeat, also across a restart that took over the owner objects.
            self._last_id = max(self._last_id, highest_id(pods))
            for name, executor_id in assign_ids(unresolved_pods(pods), self._last_id):
                patch = functools.partial(
                    self._api.patch,
                    PODS,
                    self._namespace,
                    name,
                    executor_id_patch(executor_id),
                    patch_type=JSON_PATCH,
                )
                if not guarded(f"give pod {name} executor id {executor_id}", patch):
                    break  # the ids after it would not be consecutive; the next tick goes on
                self._last_id = executor_id

    def _apply_targets(self, targets: Mapping[int, int]) -> None:
        with self._lock:
            if self._stopped:
                return
            for action in plan_owners(targets, self._replicas):
                self._apply(action)

    def _apply(self, action: OwnerAction) -> None:
        name = self._name(action.rp_id)
        if isinstance(action, CreateOwner):
            if guarded(f"create {self._kind.resource.kind} {name}", lambda: self._create(action)):
                self._replicas[action.rp_id] = action.replicas
        elif guarded(
            f"scale {self._kind.resource.kind} {name} to {action.replicas}",
            lambda: self._api.patch(self._kind.resource, self._namespace, name, scale_patch(action.replicas)),
        ):
            self._replicas[action.rp_id] = action.replicas

    def _create(self, action: CreateOwner) -> None:
        profile = self._profiles.get(action.rp_id, self._profiles[DEFAULT_PROFILE_ID])
        identity = self._identity
        built = self._builder.build(
            ExecutorPodRequest(
                executor_id=UNRESOLVED_EXECUTOR_ID,
                app_id=identity.app_id,
                driver_url=identity.driver_url,
                pod_name_prefix=identity.pod_name_prefix,
                resource_profile=profile,
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
                patch = deletion_cost_patch(cost)
                guarded(
                    f"set the deletion cost of pod {name}",
                    functools.partial(self._api.patch, PODS, self._namespace, name, patch),
                )

    def _executor_pods(self, why: str) -> list[Obj] | None:
        labels = selector_labels(self._identity.app_id, DEFAULT_PROFILE_ID)
        selector = f"{SPARK_APP_ID_LABEL}={labels[SPARK_APP_ID_LABEL]},{SPARK_ROLE_LABEL}={EXECUTOR_ROLE}"
        try:
            return self._api.list(PODS, self._namespace, label_selector=selector).items
        except ApiError as error:
            log.warning("Cannot list the executor pods to %s: %s", why, error)
            return None

    def _delete(self, name: str) -> None:
        self._api.delete(self._kind.resource, self._namespace, name)

    def _name(self, rp_id: int) -> str:
        return self._kind.object_name(self._identity.app_id, rp_id)
