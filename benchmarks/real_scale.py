"""10,000 executor pods on the real kube-apiserver (KWOK nodes): the driver's memory per executor and the
CPU of a relist, and the relist as a streaming list (a watch with ``sendInitialEvents``).

Run: ``python benchmarks/real_scale.py [--pods 10000] [--repeat 3] [--nodes 4] [--streams 8]``.

The embedded server's figures (``benchmarks/scale.py``) decode pods this project wrote itself; here the
pods are what kube-apiserver v1.37.2 returns for k8s_backend's own executor pods once kube-scheduler bound
them and KWOK turned them Running: with ``managedFields``, the scheduler's and KWOK's conditions and
status. The pods (one application, executor ids 1..N, built by ``ExecutorPodBuilder``) are created by a
bare client, ``--streams`` keep-alive HTTPS connections, and the benchmark waits until all are Running.
Then, in this process, through k8s_backend's official-client adapter (``control_plane.api()``, what the
backend lists with):

- **memory**: the bookkeeping of one backend (snapshot store, tracker, lifecycle memory, allocator; see
  :class:`_scale_memory.Tracking`) fed by one list of the N pods, as the watch source's first list does:
  what stays allocated once the list is dropped, per executor (tracemalloc, Python allocations, after a
  garbage collection), and the peak while listing (the response's bytes, the decoded list, the store);
- **relist CPU**: a relist of the N pods into a store that holds them, as the polling source does every
  ``apiPollingInterval`` and the watch source after a 410: the list (HTTP, JSON decode), replacing the
  view, delivering to the subscribers; process CPU, median of ``--repeat``;
- **streaming list** (the ``WatchList`` feature: a watch with ``sendInitialEvents=true`` sends every pod
  as an ADDED event, then a bookmark annotated ``k8s.io/initial-events-end``), as the watch source uses
  it where the server offers it: the same two figures, the pods given to the store one at a time
  (``store.relist()``), against the list's.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from _kwok import KwokCluster
from _scale_memory import APP, DRIVER_URL, MEMORY_GOAL, RESYNC_GOAL, Tracking, spark_conf
from real_api import PODS_PATH, Http, RealPodClock, clear_pods, load

from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import INITIAL_EVENTS_END, PODS
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.request import ExecutorPodRequest
from k8s_backend.snapshots.collector import collector_paused

SELECTOR = f"spark-app-selector={APP},spark-role=executor"


def pod_body(pods: int) -> str:
    """k8s_backend's executor pod for executor 1 of :data:`APP`, ``@ID@`` where the id goes."""
    conf = spark_conf(pods)
    request = ExecutorPodRequest(1, APP, DRIVER_URL, "scale", conf.executor.default_profile)
    pod = ExecutorPodBuilder(conf).build(request).pod
    pod["metadata"]["name"] = "scale-exec-@ID@"
    pod["metadata"]["labels"]["spark-exec-id"] = "@ID@"
    return json.dumps(pod, separators=(",", ":"))


def create_pods(http_: Http, clock: RealPodClock, body: str, pods: int, streams: int) -> float:
    """Create executor pods 1..``pods`` from ``streams`` threads; seconds until all are Running."""
    ids = itertools.count(1)
    failures: list[str] = []

    def stream() -> None:
        connection = http_.connect()
        while (executor_id := next(ids)) <= pods and not failures:
            payload = body.replace("@ID@", str(executor_id)).encode()
            while True:
                connection.request("POST", PODS_PATH, body=payload, headers=http_.headers)
                response = connection.getresponse()
                response.read()
                if response.status != 429:
                    break
                time.sleep(float(response.getheader("Retry-After") or 1))
            if response.status != 201:
                failures.append(f"executor {executor_id}: {response.status}")
        connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=stream, daemon=True) for _ in range(streams)]
    for thread in threads:
        thread.start()
    if not clock.wait_for(lambda: clock.running(APP) >= pods or bool(failures), 3600):
        raise RuntimeError(f"{clock.running(APP)} of {pods} pods Running after an hour")
    if failures:
        raise RuntimeError(f"creates refused: {failures[:5]}")
    for thread in threads:
        thread.join(60)
    return time.monotonic() - started


def memory_kept(pods: int, fill: Callable[[Tracking], int], what: str) -> dict[str, float]:
    """Bytes per executor one backend keeps once ``fill`` gave its store the pods (it returns how many),
    and the peak on the way (tracemalloc, after a garbage collection)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracking = Tracking(pods)
        count = fill(tracking)
        tracking.deliver()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if count != pods:
        raise RuntimeError(f"{what} gave {count} pods, expected {pods}")
    return {"retained per executor (bytes)": (current - base) / pods, "peak (MiB)": (peak - base) / 2**20}


def listed_into(api: OfficialKubernetesApi, tracking: Tracking) -> int:
    """One list of the pods into the store, as the watch source's first list does; how many."""
    with collector_paused():
        listed = api.list(PODS, "default", label_selector=SELECTOR)
        count = len(listed.items)
        tracking.store.replace_snapshot(listed.items, listed.resource_version)
        del listed
    return count


def relist_cpu(api: OfficialKubernetesApi, tracking: Tracking) -> dict[str, float]:
    """One relist into a store that holds every pod: CPU of list, replace and deliver; the list's wall."""
    gc.collect()
    with collector_paused():  # as the sources do (snapshots/collector.py)
        start, wall = time.process_time(), time.monotonic()
        listed = api.list(PODS, "default", label_selector=SELECTOR)
        listed_at, wall = time.process_time(), time.monotonic() - wall
        tracking.store.replace_snapshot(listed.items, listed.resource_version)
        del listed
    replaced = time.process_time()
    tracking.deliver()
    delivered = time.process_time()
    return {
        "list CPU (s)": listed_at - start,
        "replace CPU (s)": replaced - listed_at,
        "deliver CPU (s)": delivered - replaced,
        "relist CPU (s)": delivered - start,
        "list wall (s)": wall,
    }


def streaming_relist(api: OfficialKubernetesApi, tracking: Tracking) -> int:
    """A streaming list through the adapter, its pods given to the store one at a time (as the watch
    source does); how many pods it sent."""
    relist, seen = tracking.store.relist(), 0
    stream = api.watch(
        PODS, "default", label_selector=SELECTOR, send_initial_events=True, timeout_seconds=300
    )
    try:
        for event in stream:
            metadata = event.object.get("metadata") or {}
            if event.type == "ADDED":
                relist.add(event.object)
                seen += 1
            elif (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                relist.finish(metadata.get("resourceVersion"))
                return seen
    finally:
        stream.close()
    raise RuntimeError(f"the streaming list ended after {seen} pods without its end bookmark")


def streaming_relist_cpu(api: OfficialKubernetesApi, tracking: Tracking) -> dict[str, float]:
    """As :func:`relist_cpu`, the relist a streaming list (the collector left on, as the source does)."""
    gc.collect()
    start, wall = time.process_time(), time.monotonic()
    streaming_relist(api, tracking)
    streamed, wall = time.process_time(), time.monotonic() - wall
    tracking.deliver()
    delivered = time.process_time()
    return {
        "stream and replace CPU (s)": streamed - start,
        "deliver CPU (s)": delivered - streamed,
        "relist CPU (s)": delivered - start,
        "stream wall (s)": wall,
    }


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def repeat(times: int, measure: Callable[[], dict[str, float] | None]) -> dict[str, float] | None:
    runs = [measure() for _ in range(times)]
    return None if any(run is None for run in runs) else medians([r for r in runs if r is not None])


def show(title: str, figures: dict[str, float] | None) -> None:
    if figures is None:
        print(f"  {title}: not offered by this server")
        return
    cells = ", ".join(f"{key} {value:.3f}" for key, value in figures.items())
    print(f"  {title}: {cells}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=10_000, help="executor pods (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (default 3)")
    parser.add_argument("--nodes", type=int, default=4, help="KWOK nodes (default 4)")
    parser.add_argument("--streams", type=int, default=8, help="bare client streams for the creates")
    args = parser.parse_args(argv)
    print(f"load at start: {load()}", flush=True)
    with KwokCluster(args.nodes) as cluster:
        http_ = Http(cluster)
        clock = RealPodClock(http_)
        took = create_pods(http_, clock, pod_body(args.pods), args.pods, args.streams)
        api = cluster.control_plane.api()
        sample: Any = api.list(PODS, "default", label_selector=SELECTOR).items[0]
        size = len(json.dumps(sample, separators=(",", ":")))
        print(f"{args.pods} executor pods Running {took:.1f} s after the first create; a listed pod is "
              f"{size / 1024:.1f} KB of JSON; load {load()}", flush=True)  # fmt: skip
        show("after one list (tracemalloc)",
             repeat(args.repeat, lambda: memory_kept(
                 args.pods, lambda t: listed_into(api, t), "the list")))  # fmt: skip
        tracking = Tracking(args.pods)
        relist_cpu(api, tracking)  # fills the store: what follows is a relist of pods it holds
        show("relist into a full store, medians", repeat(args.repeat, lambda: relist_cpu(api, tracking)))
        show("after one streaming list (tracemalloc)",
             repeat(args.repeat, lambda: memory_kept(
                 args.pods, lambda t: streaming_relist(api, t), "the streaming list")))  # fmt: skip
        show("streaming relist into a full store, medians",
             repeat(args.repeat, lambda: streaming_relist_cpu(api, tracking)))  # fmt: skip
        print(f"goals: <= {MEMORY_GOAL} bytes per executor, relist <= {RESYNC_GOAL} s of CPU; load {load()}")
        clear_pods(http_, timeout=900)


if __name__ == "__main__":
    main()
