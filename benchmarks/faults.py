"""Fault suite: the backend against a LocalCluster while faults are injected, N times each, alone and mixed.

Run: ``python benchmarks/faults.py [--runs 3] [--only NAME ...] [--target 6]``. Every run starts a fresh
LocalCluster without executor processes (pods turn Running at once), asks for ``--target`` executors,
injects the fault, and prints per fault, over the runs:

- ``converged``: runs that reached exactly the target (never more live executor pods than the target);
- ``to converge``: median seconds from start (or from the fault, for faults after start-up);
- ``after heal``: median seconds from the last error the API answered (5xx, 429 or a create answered
  after the client's timeout) to the target: how fast the backend recovers once the API works again;
- ``failed app``: runs in which the backend failed the application;
- ``lost``: executor losses the backend reported (median);
- ``left``: objects of the application left 10 s after ``stop()`` returned (pods, config maps, services,
  PVCs, secrets; total over the runs);
- ``stop``: median seconds ``stop()`` took (a run that took over 120 s is shown as ``>120``);
- ``requests``: median API requests the cluster served.

The figures are wall-clock on a shared machine: read them as orders of magnitude and as pass/fail.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.labels import SPARK_APP_ID_LABEL
from k8s_backend.kube.port import CONFIG_MAPS, PODS, PVCS, SECRETS, SERVICES
from k8s_backend.local import LocalCluster

APP = "spark-faults"
DRIVER_URL = "spark://CoarseGrainedScheduler@127.0.0.1:7078"
CONVERGE_TIMEOUT = 60.0
STOP_TIMEOUT = 120.0
CLEANUP_WAIT = 10.0


def conf(target: int, **extra: str) -> dict[str, str]:
    return {
        "spark.app.name": "faults",
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.executor.podNamePrefix": "faults",
        "spark.executor.instances": str(target),
        "spark.executor.memory": "512m",
        # Every run then also creates (and must remove) the executors' auth Secret.
        "spark.authenticate": "true",
        "spark.authenticate.secret": "fault-suite-secret",
        "spark.kubernetes.allocation.batch.delay": "200ms",
        "spark.kubernetes.executor.eventProcessingInterval": "200ms",
        **extra,
    }


@attrs.define
class Run:
    converged: bool = False
    to_converge: float = float("nan")
    over_allocated: bool = False
    failed: bool = False
    lost: int = 0
    left: int = 0
    stop: float = float("nan")
    requests: int = 0
    after_heal: float = float("nan")


@attrs.frozen
class Fault:
    """How to break things: ``before`` runs before start(), ``after`` once the target is reached."""

    name: str
    before: Callable[[LocalCluster], None] = lambda cluster: None
    after: Callable[[LocalCluster], None] | None = None
    at_stop: Callable[[LocalCluster], None] = lambda cluster: None
    props: dict[str, str] = attrs.Factory(dict)


def live_executors(cluster: LocalCluster) -> list[dict[str, Any]]:
    pods = cluster.fake.objects(PODS, "default")
    return [
        p
        for p in pods
        if p["metadata"]["labels"].get(SPARK_APP_ID_LABEL) == APP
        and p["metadata"]["labels"].get("spark-role") == "executor"
        and not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") in (None, "Pending", "Running")
    ]


def running(cluster: LocalCluster) -> int:
    return sum(1 for p in live_executors(cluster) if (p.get("status") or {}).get("phase") == "Running")


def leftovers(cluster: LocalCluster) -> int:
    return sum(
        1
        for kind in (PODS, CONFIG_MAPS, SERVICES, PVCS, SECRETS)
        for o in cluster.fake.objects(kind, "default")
        if (o["metadata"].get("labels") or {}).get(SPARK_APP_ID_LABEL) == APP
    )


def end_pod(cluster: LocalCluster, exit_code: int, reason: str, phase_reason: str | None = None) -> None:
    """Make one running executor pod end as a kubelet would report it."""
    pod = sorted(live_executors(cluster), key=lambda p: p["metadata"]["name"])[0]
    status: dict[str, Any] = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "spark-kubernetes-executor",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": exit_code, "reason": reason}},
            }
        ],
    }
    if phase_reason is not None:
        status["reason"] = phase_reason
        status["message"] = "The node was low on resource: memory."
    cluster.fake.patch_status(PODS, "default", pod["metadata"]["name"], status)


def delete_one(cluster: LocalCluster) -> None:
    pod = sorted(live_executors(cluster), key=lambda p: p["metadata"]["name"])[0]
    cluster.fake.delete(PODS, "default", pod["metadata"]["name"], grace_period_seconds=0)


def compact_and_drop(cluster: LocalCluster) -> None:
    delete_one(cluster)
    cluster.fake.compact()
    cluster.fake.drop_watches()


def drop_watches_three_times(cluster: LocalCluster) -> None:
    for _ in range(3):
        cluster.fake.drop_watches()


def lists_fail_and_delete(count: int) -> Callable[[LocalCluster], None]:
    """The next ``count`` lists fail, and a pod is deleted: only a list that works can show it."""

    def fault(cluster: LocalCluster) -> None:
        cluster.fake.fail_next("list", PODS, status=500, count=count)
        delete_one(cluster)

    return fault


def mixed_after_start(cluster: LocalCluster) -> None:
    cluster.fake.drop_watches()
    end_pod(cluster, 137, "Error")
    delete_one(cluster)


POLLING_ONLY = {
    "spark.kubernetes.executor.enableApiWatcher": "false",
    "spark.kubernetes.executor.apiPollingInterval": "1s",
}
"""The watch off, a list every second: the polling source alone keeps the view."""


def faults() -> list[Fault]:
    return [
        Fault("no fault"),
        Fault("create 500 x3", before=lambda c: c.fake.fail_next("create", PODS, status=500, count=3)),
        Fault("create 500 x9", before=lambda c: c.fake.fail_next("create", PODS, status=500, count=9)),
        Fault("create 500 x20", before=lambda c: c.fake.fail_next("create", PODS, status=500, count=20)),
        Fault("create 503 x30", before=lambda c: c.fake.fail_next("create", PODS, status=503, count=30)),
        Fault("create 503 for 10 s", before=lambda c: c.fake.fail_for(10, "create", PODS, status=503)),
        Fault(
            "create 429 x5, Retry-After 1",
            before=lambda c: c.fake.fail_next("create", PODS, status=429, count=5, retry_after=1),
        ),
        Fault(
            "creates take 3 s, client timeout 1 s",
            before=lambda c: c.fake.add_latency(3.0, "create"),
            props={"spark.kubernetes.driver.requestTimeout": "1000"},
        ),
        Fault("creates over 2/s answered 429", before=lambda c: c.fake.limit_rate(2, "create", PODS)),
        Fault("list 500 x5 at start", before=lambda c: c.fake.fail_next("list", PODS, status=500, count=5)),
        Fault("polling only: list 500 x10, pod deleted", after=lists_fail_and_delete(10), props=POLLING_ONLY),
        Fault("polling only: list 500 x30, pod deleted", after=lists_fail_and_delete(30), props=POLLING_ONLY),
        Fault("polling only: pod deleted", after=delete_one, props=POLLING_ONLY),
        Fault("watch drops x3", after=drop_watches_three_times),
        Fault("410 with compaction", after=compact_and_drop),
        Fault("executor SIGKILL (137)", after=lambda c: end_pod(c, 137, "Error")),
        Fault("executor OOM", after=lambda c: end_pod(c, 137, "OOMKilled")),
        Fault("eviction", after=lambda c: end_pod(c, 137, "Error", phase_reason="Evicted")),
        Fault("pod deleted behind the backend", after=delete_one),
        Fault("hung server at stop (60 s per call)", at_stop=lambda c: c.fake.add_latency(60.0)),
        Fault("every verb 503 at stop", at_stop=lambda c: c.fake.fail_for(600, "*", status=503)),
        Fault(
            "mixed: create 500 x2, watch drop, SIGKILL, deletion",
            before=lambda c: c.fake.fail_next("create", PODS, status=500, count=2),
            after=mixed_after_start,
        ),
    ]


class LastError:
    """Samples the server's request log: when it last answered an error (5xx or 429), on a thread."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster
        self._seen = 0
        self._errors = 0
        self.at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.sample()

    def sample(self) -> None:
        records = self._cluster.server.request_log
        new = records[self._seen :]
        self._seen = len(records)
        errors = sum(1 for r in new if r.status >= 500 or r.status == 429)
        if errors:
            self._errors += errors
            self.at = time.monotonic()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def one_run(fault: Fault, target: int) -> Run:
    result = Run()
    with LocalCluster(run_processes=False) as cluster:
        failures: list[str] = []
        backend = KubernetesClusterSchedulerBackend.create(
            conf(target, **fault.props),
            app_id=APP,
            driver_url=DRIVER_URL,
            api=cluster.api(),
            on_application_failed=failures.append,
        )
        fault.before(cluster)
        began = time.monotonic()

        def settled() -> bool:
            if len(live_executors(cluster)) > target:
                result.over_allocated = True
            return running(cluster) == target and len(live_executors(cluster)) == target

        last_error = LastError(cluster)
        try:
            backend.start()
            reached = cluster.wait_until(lambda: settled() or bool(failures), CONVERGE_TIMEOUT)
            if reached and not failures and fault.after is not None:
                fault.after(cluster)
                began = time.monotonic()
                time.sleep(0.5)  # let the fault be seen before checking for the target again
                reached = cluster.wait_until(lambda: settled() or bool(failures), CONVERGE_TIMEOUT)
            if reached and not failures:
                result.converged = not result.over_allocated
                result.to_converge = time.monotonic() - began
                last_error.sample()
                if last_error.at is not None:
                    result.after_heal = time.monotonic() - max(last_error.at, began)
        except Exception as error:  # a start() that raises is a result, not a crash of the suite
            failures.append(f"{type(error).__name__}: {error}")
        last_error.stop()
        result.failed = bool(failures)
        status = backend.status()
        result.lost = len(status["recent_losses"])
        fault.at_stop(cluster)
        stopped = threading.Event()
        stopping = time.monotonic()
        def stop() -> None:
            backend.stop()
            stopped.set()

        threading.Thread(target=stop, daemon=True).start()
        result.stop = time.monotonic() - stopping if stopped.wait(STOP_TIMEOUT) else float("inf")
        cluster.fake.clear_faults()
        cluster.wait_until(lambda: leftovers(cluster) == 0, CLEANUP_WAIT)
        result.left = leftovers(cluster)
        result.requests = len(cluster.server.request_log)
    return result


def _median(values: list[float]) -> str:
    finite = [v for v in values if v == v]  # drop NaN (runs that never converged)
    if not finite:
        return "-"
    value = statistics.median(finite)
    return ">120" if value == float("inf") else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per fault (default 3)")
    parser.add_argument("--target", type=int, default=6, help="executors to ask for (default 6)")
    parser.add_argument("--only", nargs="*", default=None, help="names (substrings) of the faults to run")
    args = parser.parse_args()
    chosen = [f for f in faults() if not args.only or any(o in f.name for o in args.only)]
    print(f"{'fault':52} converged  to converge  after heal  failed app  lost  left  stop s  requests")
    for fault in chosen:
        runs = [one_run(fault, args.target) for _ in range(args.runs)]
        print(
            f"{fault.name:52} {sum(r.converged for r in runs)}/{len(runs):<8} "
            f"{_median([r.to_converge for r in runs]):>11}  {_median([r.after_heal for r in runs]):>10}  "
            f"{sum(r.failed for r in runs)}/{len(runs):<9} "
            f"{statistics.median(r.lost for r in runs):>4}  {sum(r.left for r in runs):>4}  "
            f"{_median([r.stop for r in runs]):>6}  {statistics.median(r.requests for r in runs):>8}",
            flush=True,
        )


if __name__ == "__main__":
    main()
