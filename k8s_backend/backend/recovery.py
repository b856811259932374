"""Recovery when a backend starts for an application that already has executor pods.

A restarted driver (or a new one re-attaching to the same application id) finds pods from before. In
order, before any allocation: list them, adopt the live ones that still match (same driver URL and
image; they count toward the target), delete the others and the finished ones, and continue executor ids
above the highest seen so that no id is ever reused. Policy ``spark.kubernetes.recovery.policy``:
``adopt`` (default) or ``delete`` (start clean).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from k8s_backend.kube.labels import SPARK_EXECUTOR_INACTIVE_LABEL, executor_selector
from k8s_backend.kube.port import PODS, ApiError, KubernetesApi, NotFoundError, Obj
from k8s_backend.snapshots.states import PodPhase, PodStateRules, executor_id_of
from k8s_backend.snapshots.store import SnapshotsStore

log = logging.getLogger(__name__)

POLICIES = ("adopt", "delete")


@attrs.frozen
class RecoveryPlan:
    adopt: tuple[Obj, ...] = ()
    delete_live: tuple[str, ...] = ()  # live pods that do not match the configuration (or policy=delete)
    delete_finished: tuple[str, ...] = ()
    highest_executor_id: int = 0

    @property
    def next_executor_id(self) -> int:
        return self.highest_executor_id + 1


def _spark_container(pod: Obj, container_name: str) -> dict[str, Any]:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == container_name:
            return dict(container)
    return {}


def _env(container: dict[str, Any], name: str) -> str | None:
    for item in container.get("env") or []:
        if item.get("name") == name:
            return str(item.get("value", ""))
    return None


def matches(pod: Obj, *, driver_url: str, image: str | None, container_name: str) -> bool:
    """A live pod is adoptable when it talks to this driver and runs the configured image."""
    container = _spark_container(pod, container_name)
    if not container:
        return False
    if _env(container, "SPARK_DRIVER_URL") != driver_url:
        return False
    return image is None or container.get("image") == image


def is_active(pod: Obj) -> bool:
    """Not marked inactive by the driver (the watch and polling sources leave such pods out)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(SPARK_EXECUTOR_INACTIVE_LABEL) != "true"


def plan_recovery(
    pods: Sequence[Obj],
    *,
    policy: str,
    driver_url: str,
    image: str | None,
    rules: PodStateRules,
) -> RecoveryPlan:
    """Decide, without I/O, what to do with each pod found at start."""
    adopt: list[Obj] = []
    delete_live: list[str] = []
    delete_finished: list[str] = []
    highest = 0
    for pod in pods:
        executor_id = executor_id_of(pod)
        if executor_id is None:
            continue
        highest = max(highest, executor_id)
        state = rules.to_state(pod)
        if state is None or state.is_being_deleted:
            continue
        if state.phase.is_final or state.phase is PodPhase.UNKNOWN:
            delete_finished.append(state.name)
        elif policy == "adopt" and matches(
            pod, driver_url=driver_url, image=image, container_name=rules.container_name
        ):
            adopt.append(pod)
        else:
            delete_live.append(state.name)
    return RecoveryPlan(tuple(adopt), tuple(delete_live), tuple(delete_finished), highest)


@attrs.frozen
class RecoveryReport:
    """``resource_version``: the list's; the watch starts from it instead of listing again."""

    adopted: int
    deleted: int
    next_executor_id: int
    failed_deletes: tuple[str, ...] = ()
    resource_version: str | None = None


def recover(
    api: KubernetesApi,
    store: SnapshotsStore,
    *,
    namespace: str,
    app_id: str,
    policy: str,
    driver_url: str,
    image: str | None,
    rules: PodStateRules,
    delete_finished: bool = True,
) -> tuple[RecoveryPlan, RecoveryReport]:
    """List the application's pods, apply the plan, and seed the store with the adopted ones.

    Raises the list's :class:`ApiError` (same type, with what was being done in its message) when the
    pods cannot be listed once the API client's retries are spent: starting blind could reuse the ids
    of live executors.
    """
    try:
        listed = api.list(PODS, namespace, label_selector=executor_selector(app_id))
    except ApiError as error:
        raise type(error)(
            f"Cannot list the executor pods an earlier driver of application {app_id} may have left in "
            f"namespace {namespace}, to recover them: {error.message}",
            status=error.status,
            reason=error.reason,
            retry_after=error.retry_after,
            body=error.body,
        ) from error
    plan = plan_recovery(listed.items, policy=policy, driver_url=driver_url, image=image, rules=rules)
    doomed = list(plan.delete_live) + (list(plan.delete_finished) if delete_finished else [])
    failed: list[str] = []
    for name in doomed:
        try:
            api.delete(PODS, namespace, name)
        except NotFoundError:
            pass
        except Exception as error:
            log.warning("Recovery could not delete executor pod %s: %s", name, error)
            failed.append(name)
    # Always, even with nothing adopted: this list is the store's first full view (the watch source
    # starts from its version instead of taking one of its own). Inactive pods are left out, as the
    # watch's selector leaves them out.
    store.replace_snapshot([p for p in plan.adopt if is_active(p)], listed.resource_version)
    report = RecoveryReport(
        len(plan.adopt),
        len(doomed) - len(failed),
        plan.next_executor_id,
        tuple(failed),
        listed.resource_version,
    )
    if listed.items:
        log.info(
            "Recovered application %s: adopted %d executor pods, deleted %d, next executor id %d",
            app_id,
            report.adopted,
            report.deleted,
            report.next_executor_id,
        )
    return plan, report
