"""10,000 executors in one application: memory per tracked executor and the CPU of a full resync.

The pods are what a cluster returns for k8s_backend's own executor pods: built by ExecutorPodBuilder,
stored by FakeKubernetes (uid, resourceVersion, creationTimestamp) and given the status the local kubelet
renders for a running pod, then decoded from JSON one pod at a time, as watch events arrive (a decoded
list shares its dictionary keys between pods; watch events do not, so this is the larger case).

What is counted (tracemalloc, Python allocations only, after a garbage collection):

- ``retained``: everything still allocated once every pod was applied to the snapshot store and
  delivered to its subscribers, and the decoded events were dropped: the pod data the store keeps (its
  compact form, see :mod:`k8s_backend.snapshots.store_pods`), the states and views, the executor
  tracker's state machines and histories, the lifecycle decisions' memory and the allocator's indexes;
- ``decoded``: for comparison, the pod objects as the watch hands them over (what the store would keep
  if it kept them as they are).

A full resync is what the polling source does every ``apiPollingInterval`` and the watch source after a
410: decode the list's JSON, replace the store's view, deliver the resync batch to the subscribers.
"""

from __future__ import annotations

import gc
import json
import re
import time
import tracemalloc
from typing import Any

from k8s_backend.allocation.allocator import AllocatorIdentity, AllocatorSettings, ExecutorPodsAllocator
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import PODS
from k8s_backend.lifecycle.decisions import NOTHING_REMEMBERED, LifecycleDecider
from k8s_backend.local.kubelet.podstate import PodRecord, timestamp
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.snapshots.collector import collector_paused
from k8s_backend.snapshots.snapshot import SnapshotBatch
from k8s_backend.snapshots.store import ExecutorPodsSnapshotsStore
from k8s_backend.testing import FakeKubernetes
from k8s_backend.tracking.tracker import ExecutorTracker

APP = "spark-scale"
DRIVER_URL = "spark://CoarseGrainedScheduler@driver:7078"
CONTAINER = "spark-kubernetes-executor"
MEMORY_GOAL = 5 * 1024
RESYNC_GOAL = 0.5
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def spark_conf(executors: int) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(
        {"spark.kubernetes.container.image": "spark:4.3.0", "spark.executor.instances": str(executors)}
    )


def pod_texts(count: int) -> list[str]:
    """``count`` running executor pods as JSON, one text per pod (as watch events carry them)."""
    conf = spark_conf(count)
    request = ExecutorPodRequest(1, APP, DRIVER_URL, "scale", conf.executor.default_profile)
    fake = FakeKubernetes()
    template = fake.create(PODS, "default", ExecutorPodBuilder(conf).build(request).pod)
    record = PodRecord.from_pod(template)
    record.node, record.start_time = "node-1", time.time()
    for container in record.containers:
        container.set_running(time.time(), "containerd://" + "0" * 64)
    template["status"] = record.render_status(time.time(), pod_ip="10.0.0.1", host_ip="10.1.0.1")
    template["spec"]["nodeName"] = "node-1"
    texts = []
    for executor_id in range(1, count + 1):
        pod = json.loads(json.dumps(template))
        meta = pod["metadata"]
        meta["name"] = f"scale-exec-{executor_id}"
        meta["labels"]["spark-exec-id"] = str(executor_id)
        meta["uid"] = f"{executor_id:08d}-0000-4000-8000-000000000000"
        meta["resourceVersion"] = str(100 + executor_id)
        pod["status"]["podIP"] = f"10.0.{executor_id // 250}.{executor_id % 250}"
        # Ten pods a second: no two pods' times are alike beyond that (their text is the same length).
        texts.append(TIME.sub(timestamp(1_700_000_000 + executor_id // 10), json.dumps(pod)))
    return texts


class Tracking:
    """The per-executor bookkeeping of one backend: store, tracker, lifecycle memory and allocator."""

    def __init__(self, executors: int) -> None:
        self.clock = ManualClock(1_700_000_000.0)
        self.scheduler = DeterministicScheduler(self.clock)
        self.store = ExecutorPodsSnapshotsStore(self.scheduler, self.clock)
        self.tracker = ExecutorTracker(container_name=CONTAINER)
        decider = LifecycleDecider(container_name=CONTAINER)
        self.memory: list[Any] = [NOTHING_REMEMBERED]

        def decide(batch: SnapshotBatch) -> None:  # as the lifecycle manager does
            self.memory[0] = decider.decide(batch, {}, self.clock.now(), self.memory[0]).memory

        def track(batch: SnapshotBatch) -> None:  # as the monitor does (its reports are not kept here)
            self.tracker.on_batch(batch, self.clock.now())

        self.store.add_subscriber(1.0, track)
        self.store.add_subscriber(1.0, decide)
        conf = spark_conf(executors)
        self.allocator = ExecutorPodsAllocator(
            AllocatorSettings.from_conf(conf),
            AllocatorIdentity(app_id=APP, driver_url=DRIVER_URL, pod_name_prefix="scale"),
            FakeKubernetes(clock=self.clock),
            ExecutorPodBuilder(conf),
            self.store,
            self.clock,
        )
        self.allocator.advance_executor_id_counter(executors + 1)
        self.allocator.start()
        self.allocator.set_total_expected_executors({0: executors})

    def deliver(self) -> None:
        self.store.notify_subscribers()
        self.scheduler.run_until_idle()


def memory_per_executor(texts: list[str]) -> tuple[float, float]:
    """(bytes of the decoded pod objects, bytes the backend retains) per executor."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        pods = [json.loads(text) for text in texts]
        decoded = tracemalloc.get_traced_memory()[0] - base
        tracking = Tracking(len(texts))
        for pod in pods:
            tracking.store.update_pod(pod)
        tracking.deliver()
        del pods  # only what the backend keeps remains
        gc.collect()
        total = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    count = len(texts)
    return decoded / count, total / count


def resync_cpu(texts: list[str]) -> tuple[float, float, float]:
    """CPU seconds of one full resync of every pod: (decode the list, replace the view, deliver)."""
    tracking = Tracking(len(texts))
    for text in texts:
        tracking.store.update_pod(json.loads(text))
    tracking.deliver()
    body = '{"kind":"PodList","metadata":{"resourceVersion":"99999999"},"items":[' + ",".join(texts) + "]}"
    gc.collect()
    # As the polling and watch sources do: the collector paused from the list's decode until the decoded
    # list is dropped (snapshots/collector.py); the delivery runs with it on.
    with collector_paused():
        start = time.process_time()
        listed = json.loads(body)
        decoded = time.process_time()
        tracking.store.replace_snapshot(listed["items"], listed["metadata"]["resourceVersion"])
        del listed
    replaced = time.process_time()
    tracking.deliver()
    delivered = time.process_time()
    return decoded - start, replaced - decoded, delivered - replaced


def print_memory_and_resync(executors: int) -> None:
    texts = pod_texts(executors)
    decoded_bytes, retained_bytes = memory_per_executor(texts)
    # The median of three resyncs by total (CPU time still moves with the machine's load).
    runs = sorted((resync_cpu(texts) for _ in range(3)), key=sum)
    decode, replace, deliver = runs[1]
    total = decode + replace + deliver
    json_kb = sum(len(t) for t in texts) / len(texts) / 1024
    print(f"{executors} executors in one application (pod JSON {json_kb:.1f} KB each)")
    within = "within" if retained_bytes <= MEMORY_GOAL else "over"
    print(
        f"  memory retained per tracked executor: {retained_bytes / 1024:6.2f} KB ({within} the 5 KB goal; "
        "pod data kept, states, views, tracker, lifecycle memory, allocator)"
    )
    print(f"  a decoded watch event's pod object:   {decoded_bytes / 1024:6.2f} KB (for comparison)")
    verdict = "within" if total <= RESYNC_GOAL else "over"
    print(f"  full resync CPU, median of 3: {total:.3f} s ({verdict} the 0.5 s goal; fastest "
          f"{sum(runs[0]):.3f} s, slowest {sum(runs[2]):.3f} s): decode {decode:.3f} s, "
          f"replace the view {replace:.3f} s, deliver to subscribers {deliver:.3f} s")  # fmt: skip
