"""Operations the driver asks for on running executors: kill, decommission labelling, the config map.

Each hook hands the work to the backend's scheduler and returns at once.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence

from k8s_backend.common import Clock, Scheduler
from k8s_backend.conf.model import LifecycleConf
from k8s_backend.kube.labels import executor_selector
from k8s_backend.kube.port import (
    CONFIG_MAPS,
    POD_GROUPS,
    PODS,
    SECRETS,
    STRATEGIC_MERGE_PATCH,
    ConflictError,
    KubernetesApi,
    NotFoundError,
    Obj,
)
from k8s_backend.lifecycle.driver_port import DriverEndpoint, ExecutorLoss

log = logging.getLogger(__name__)

KILLED_MESSAGE = "Executor killed by driver."
EXIT_POLL = 0.2  # seconds between looks at the executors that should exit


def _is_ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class ExecutorOperations:
    """Kill and decommission executors through the Kubernetes port, off the caller's thread."""

    def __init__(
        self,
        api: KubernetesApi,
        scheduler: Scheduler,
        clock: Clock,
        *,
        namespace: str,
        app_id: str,
        lifecycle: LifecycleConf,
        driver: DriverEndpoint | None = None,
    ) -> None:
        """``lifecycle``: the delete grace period and the decommission label are read from it."""
        self._api = api
        self._scheduler = scheduler
        self._clock = clock
        self._namespace = namespace
        self._app_selector = executor_selector(app_id)
        self._grace = lifecycle.delete_grace_period
        self._label = lifecycle.decommission_label
        self._label_value = lifecycle.decommission_label_value
        self._driver = driver

    def create_config_map(self, body: Obj) -> None:
        try:
            self._api.create(CONFIG_MAPS, self._namespace, body)
        except ConflictError:
            # A restarted driver re-attaching to its application finds the map already there.
            log.info("Executor config map %s already exists", body.get("metadata", {}).get("name"))

    def create_auth_secret(self, body: Obj) -> None:
        try:
            self._api.create(SECRETS, self._namespace, body)
        except ConflictError:  # a retried create that had landed (the name is this start's own)
            log.info("Executor auth secret %s already exists", body.get("metadata", {}).get("name"))

    def wait_for_driver_ready(self, name: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the driver pod to be Ready: its Service's DNS name does not
        resolve before that (SPARK-32975). Errors and timeouts are only logged, as in Spark."""
        deadline = self._clock.now() + timeout
        stream = None
        try:
            pod = self._api.get(PODS, self._namespace, name)
            if _is_ready(pod):
                return True
            stream = self._api.watch(
                PODS,
                self._namespace,
                field_selector=f"metadata.name={name}",
                resource_version=str(pod["metadata"].get("resourceVersion", "")) or None,
                timeout_seconds=max(1, math.ceil(timeout)),
            )
            for event in stream:
                if event.type != "BOOKMARK" and _is_ready(event.object):
                    return True
                if self._clock.now() >= deadline:
                    break
        except Exception as error:
            log.warning("Waiting for the driver pod %s to be ready failed: %s", name, error)
            return False
        finally:
            if stream is not None:
                stream.close()
        log.info("The driver pod %s is not ready after %.1fs; allocating executors anyway", name, timeout)
        return False

    def wait_for_executors_to_exit(
        self, timeout: float, running: Callable[[], int] | None = None, *, pause: float = EXIT_POLL
    ) -> bool:
        """Give executors the driver told to stop up to ``timeout`` seconds to exit by themselves, so that
        deleting their pods afterwards does not kill them mid-shutdown (exit 143).

        ``running`` counts the executors still running, looked at every ``pause`` seconds: a live watch's
        view costs no request. Without it, each look lists the running executor pods."""
        count = running or self._running_pods
        deadline = self._clock.now() + timeout
        # Bounded by a count of looks too: a clock that does not move on its own (a test's) must not
        # turn the wait into a hang.
        looks_left = math.ceil(timeout / pause) + 1
        wait = threading.Event()
        while True:
            try:
                still = count()
            except Exception as error:
                log.info("Not waiting for executors to exit: %s", error)
                return False
            if not still:
                return True
            looks_left -= 1
            if self._clock.now() >= deadline or looks_left <= 0:
                log.info("%d executors still running after %.1fs; deleting their pods", still, timeout)
                return False
            wait.wait(pause)  # other processes (the executors) are what we wait for

    def _running_pods(self) -> int:
        pods = self._api.list(
            PODS, self._namespace, label_selector=self._app_selector, field_selector="status.phase=Running"
        )
        return len(pods.items)

    def delete_pods_eventually(
        self, names: Sequence[str], *, interval: float = 5.0, attempts: int = 120
    ) -> None:
        """Keep trying to delete these pods every ``interval`` seconds until they are gone (or give up
        after ``attempts`` rounds with an error line): recovery must not leave an old driver's executors."""
        remaining = set(names)
        tries = [0]

        def attempt() -> None:
            tries[0] += 1
            for name in sorted(remaining):
                try:
                    self._api.delete(PODS, self._namespace, name)
                except NotFoundError:
                    pass
                except Exception as error:
                    log.warning("Deleting executor pod %s failed again: %s", name, error)
                    continue
                remaining.discard(name)
            if remaining and tries[0] < attempts:
                self._scheduler.schedule(interval, attempt)
            elif remaining:
                log.error("Giving up deleting executor pods %s after %d tries", sorted(remaining), tries[0])

        if remaining:
            self._scheduler.schedule(interval, attempt)

    def create_pod_group(self, body: Obj) -> None:
        try:
            self._api.create(POD_GROUPS, self._namespace, body)
        except ConflictError:
            log.info("PodGroup %s already exists", body.get("metadata", {}).get("name"))

    def _ids_selector(self, executor_ids: Sequence[str]) -> str:
        return f"{self._app_selector},spark-exec-id in ({','.join(sorted(executor_ids))})"

    def kill(self, executor_ids: Sequence[str]) -> None:
        """Label, remove from the driver, and force-delete what still runs after the grace period."""
        ids = [i for i in executor_ids if i]
        if not ids:
            return
        self._scheduler.submit(lambda: self._kill_now(ids))

    def _kill_now(self, executor_ids: Sequence[str]) -> None:
        self._label_now(executor_ids)
        if self._driver is not None:
            for executor_id in executor_ids:
                try:
                    self._driver.remove_executor(
                        executor_id, ExecutorLoss(-1, False, KILLED_MESSAGE, killed_by_driver=True)
                    )
                except Exception:
                    log.exception("Could not tell the driver to remove executor %s", executor_id)
        self._scheduler.schedule(self._grace, lambda: self.force_delete_running(executor_ids))

    def force_delete_running(self, executor_ids: Sequence[str]) -> None:
        """Delete killed executors' pods still Running (ignoring deleteOnTermination, as Spark does)."""
        selector = self._ids_selector(executor_ids)
        running = "status.phase=Running"
        try:
            still = self._api.list(
                PODS, self._namespace, label_selector=selector, field_selector=running
            ).items
            if not still:
                return
            log.info(
                "Forcefully deleting %d pods (out of %d) that are still running after graceful "
                "shutdown period.",
                len(still),
                len(executor_ids),
            )
            self._api.delete_collection(
                PODS, self._namespace, label_selector=selector, field_selector=running
            )
        except Exception as error:
            log.warning("Force-deleting killed executors %s failed: %s", ",".join(executor_ids), error)

    def delete_pods_now(self, executor_ids: Sequence[str]) -> int:
        """Delete the executors' pods with grace 0 from the caller's thread, as a lost node would take
        them: Spark is not told first, and sees the executors lost (for tests of a job's resilience,
        e.g. the pytest plugin's ``pyk8s_executors.kill()``). Returns how many pods were deleted."""
        ids = [i for i in executor_ids if i]
        if not ids:
            return 0
        pods = self._api.list(PODS, self._namespace, label_selector=self._ids_selector(ids)).items
        deleted = 0
        for pod in pods:
            try:
                self._api.delete(PODS, self._namespace, pod["metadata"]["name"], grace_period_seconds=0)
            except NotFoundError:
                continue  # gone meanwhile
            deleted += 1
        return deleted

    def label_decommissioning(self, executor_ids: Sequence[str]) -> None:
        """Add the decommission label (when configured) to the executors' pods."""
        if self._label and executor_ids:
            ids = list(executor_ids)
            self._scheduler.submit(lambda: self._label_now(ids))

    def _label_now(self, executor_ids: Sequence[str]) -> None:
        if not self._label:
            return
        patch = {"metadata": {"labels": {self._label: self._label_value}}}
        try:
            pods = self._api.list(
                PODS, self._namespace, label_selector=self._ids_selector(executor_ids)
            ).items
        except Exception as error:
            log.warning("Listing pods to label as decommissioning failed: %s", error)
            return
        for pod in pods:
            name = pod["metadata"]["name"]
            try:
                self._api.patch(PODS, self._namespace, name, patch, patch_type=STRATEGIC_MERGE_PATCH)
            except Exception as error:
                log.warning("Labelling pod %s as decommissioning failed: %s", name, error)
