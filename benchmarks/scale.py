"""Scale check: cost per watch event and per allocation round at 1k, 5k and 10k executor pods, then the
memory per tracked executor and the CPU of a full resync with 10,000 executors in one application.

Run: ``python benchmarks/scale.py [--executors 10000]``. Prints microseconds per watch event (store update
plus the delivery share of both subscribers) and milliseconds per allocation round; flat figures across
pod counts mean no per-event cost grows with the number of pods. Then (see :mod:`_scale_memory`): the bytes
the backend keeps per executor, with and without the pod objects it holds (goal <= 5 KB), and the CPU
seconds of one full resync of every pod (goal <= 0.5 s). ``benchmarks/scale_apps.py`` runs many
applications at once.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _scale_memory import print_memory_and_resync

from k8s_backend.allocation.allocator import AllocatorIdentity, AllocatorSettings, ExecutorPodsAllocator
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.lifecycle.decisions import NOTHING_REMEMBERED, LifecycleDecider
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes

APP = "spark-bench"


def pod(executor_id: int, phase: str, version: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"bench-exec-{executor_id}",
            "namespace": "default",
            "resourceVersion": str(version),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "spark-app-selector": APP,
                "spark-role": "executor",
                "spark-exec-id": str(executor_id),
                "spark-exec-resourceprofile-id": "0",
            },
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
        "status": {"phase": phase},
    }


def watch_event_cost(pods: int, events: int) -> float:
    """Microseconds per watch event: update_pod plus delivering batches to two subscribers."""
    scheduler = DeterministicScheduler(ManualClock())
    store = ExecutorPodsSnapshotsStore(scheduler, scheduler.clock)
    decider = LifecycleDecider(container_name="spark-kubernetes-executor")
    sink: list[SnapshotBatch] = []
    store.add_subscriber(1.0, sink.append)
    memory = [NOTHING_REMEMBERED]

    def decide(batch: SnapshotBatch) -> None:  # as the lifecycle manager does: each memory feeds the next
        memory[0] = decider.decide(batch, {}, scheduler.clock.now(), memory[0]).memory

    store.add_subscriber(1.0, decide)
    store.replace_snapshot([pod(i, "Running", i) for i in range(1, pods + 1)], str(pods))
    scheduler.run_until_idle()
    payload = [pod(1 + (n % pods), "Running" if n % 2 else "Pending", pods + n + 1) for n in range(events)]
    start = time.perf_counter()
    for n, body in enumerate(payload):
        store.update_pod(body)
        if n % 1000 == 999:  # deliveries happen about once a second; assume 1000 events a second
            store.notify_subscribers()
            scheduler.run_until_idle()
    store.notify_subscribers()
    scheduler.run_until_idle()
    return (time.perf_counter() - start) / events * 1e6


def allocation_round_cost(pods: int, rounds: int) -> float:
    """Milliseconds per allocation round with ``pods`` running executors and the target met."""
    clock = ManualClock(1_700_000_000.0)
    scheduler = DeterministicScheduler(clock)
    store = ExecutorPodsSnapshotsStore(scheduler, clock)
    conf = KubernetesConf.from_spark_conf(
        {"spark.kubernetes.container.image": "spark:4.3.0", "spark.executor.instances": str(pods)}
    )
    allocator = ExecutorPodsAllocator(
        AllocatorSettings.from_conf(conf),
        AllocatorIdentity(
            app_id=APP, driver_url="spark://CoarseGrainedScheduler@driver:7078", pod_name_prefix="bench"
        ),
        FakeKubernetes(clock=clock),
        ExecutorPodBuilder(conf),
        store,
        clock,
    )
    allocator.advance_executor_id_counter(pods + 1)
    store.replace_snapshot([pod(i, "Running", i) for i in range(1, pods + 1)], str(pods))
    allocator.start()
    allocator.set_total_expected_executors({0: pods})
    scheduler.run_until_idle()
    start = time.perf_counter()
    for n in range(rounds):
        store.update_pod(pod(1 + n % pods, "Running", pods + n + 1))
        store.notify_subscribers()
        scheduler.run_until_idle()
    return (time.perf_counter() - start) / rounds * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--executors", type=int, default=10_000, help="for the memory and resync figures")
    parser.add_argument("--skip-costs", action="store_true", help="only the memory and resync figures")
    args = parser.parse_args()
    print_memory_and_resync(args.executors)
    if args.skip_costs:
        return
    print(f"{'pods':>6} {'us/watch event':>15} {'ms/allocation round':>20}")
    for pods in (1_000, 5_000, 10_000):
        per_event = watch_event_cost(pods, args.events)
        per_round = allocation_round_cost(pods, args.rounds)
        print(f"{pods:>6} {per_event:>15.1f} {per_round:>20.2f}")


if __name__ == "__main__":
    main()
