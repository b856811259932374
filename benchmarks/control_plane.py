"""The real control plane's costs, and 1000 executor pods on it against the embedded API server.

Run: ``python benchmarks/control_plane.py [--pods 1000] [--batch 100] [--cold] [--skip-allocation]``.

- **cold build**: with ``--cold``, builds kube-apiserver, kube-scheduler, kube-controller-manager and etcd
  into a temporary ``K8S_BACKEND_CACHE_DIR`` and times it (about 10 minutes on 2 cores; the Go module and
  build caches stay where Go keeps them, so a machine that built once measures a warm Go cache: the
  figure printed says which). Without it, the time the cached build recorded (``build.json``), or
  "not measured".
- **warm start**: from ``start()`` (binaries cached) to ``/readyz`` ok, to the ``default`` ServiceAccount,
  and to every node Ready and schedulable (the process kubelet registered them and the node lifecycle
  controller lifted the not-ready taint).
- **1000 executor pods without processes** on ``LocalCluster(control_plane="kubernetes")`` and on the
  embedded ``LocalCluster()``: the backend runs in a child process of its own (so its CPU is its own, not
  the embedded server's or the kubelet's); from ``start()`` with ``spark.executor.instances=N`` to every
  pod created and to every pod Running in the backend's view: wall times, the backend's API requests by
  verb, and its CPU seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import KubernetesApi, Resource

_T = TypeVar("_T")
NODES = 4


class CountingApi(DelegatingKubernetesApi):
    """Counts the backend's API calls by verb and resource (a watch counts once, when it is opened)."""

    def __init__(self, wrapped: KubernetesApi) -> None:
        super().__init__(wrapped)
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def around(self, verb: str, resource: Resource, call: Callable[[], _T]) -> _T:
        with self._lock:
            self.counts[f"{verb} {resource.plural}"] += 1
        return call()


# -- the backend, in a child process --------------------------------------------------------------------


def allocate(settings: dict[str, Any]) -> dict[str, Any]:
    """Run the backend against the cluster in ``settings`` until ``pods`` executors run; its figures."""
    from k8s_backend import KubernetesClusterSchedulerBackend
    from k8s_backend.kube.client import OfficialKubernetesApi
    from k8s_backend.kube.settings import ApiClientConf

    conf = ApiClientConf(master=settings["url"], oauth_token=settings["token"], ca_cert_file=settings["ca"])
    api = CountingApi(OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ={}))
    pods = int(settings["pods"])
    props = {
        "spark.app.name": "control-plane-bench",
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.executor.podNamePrefix": "bench",
        "spark.executor.instances": str(pods),
        "spark.kubernetes.allocation.batch.size": str(settings["batch"]),
    }
    backend = KubernetesClusterSchedulerBackend.create(
        props, app_id="spark-bench", driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078", api=api
    )
    pause = threading.Event()
    cpu, started = time.process_time(), time.monotonic()
    backend.start()
    deadline = started + float(settings["timeout"])
    running, created = 0, None
    while time.monotonic() < deadline:
        running = int(backend.status()["pods"]["running"])
        if created is None and api.counts["create pods"] >= pods:
            created = time.monotonic() - started
        if running >= pods:
            break
        pause.wait(0.25)
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    counts = dict(api.counts)
    backend.stop()
    return {"seconds": seconds, "created": created, "cpu": cpu, "running": running, "requests": counts}


def allocate_in_child(settings: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--allocate", json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=float(settings["timeout"]) + 300,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the backend's child failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def on_cluster(kind: str, pods: int, batch: int, timeout: float) -> dict[str, Any]:
    from k8s_backend.local import LocalCluster, Node

    nodes = [Node.of(f"node-{i + 1}", cpu="100000", memory="1000Ti") for i in range(NODES)]
    with LocalCluster(control_plane=kind, run_processes=False, nodes=nodes, tls=True) as cluster:
        settings = {
            "url": cluster.url,
            "token": cluster.token,
            "ca": str(cluster.ca_cert),
            "pods": pods,
            "batch": batch,
            "timeout": timeout,
        }
        return allocate_in_child(settings)


# -- the control plane itself ----------------------------------------------------------------------------


def cold_build() -> tuple[float, dict[str, Any] | None]:
    from k8s_backend.local.control_plane import ControlPlaneBuilder

    with tempfile.TemporaryDirectory(prefix="k8s-backend-cold-build-") as cache:
        builder = ControlPlaneBuilder(cache_dir=Path(cache), progress=lambda line: print("  " + line))
        started = time.monotonic()
        builder.ensure()
        return time.monotonic() - started, builder.recorded_build()


def recorded_build() -> dict[str, Any] | None:
    from k8s_backend.local.control_plane import ControlPlaneBuilder

    return ControlPlaneBuilder().recorded_build()


def warm_start() -> dict[str, float]:
    from k8s_backend.local.control_plane import ControlPlaneBuilder
    from k8s_backend.local.control_plane.with_kubelet import KubeletControlPlane
    from k8s_backend.local.kubelet import Node

    ControlPlaneBuilder().ensure()  # cached: a warm start measures starting, not building
    nodes = [Node.of(f"node-{i + 1}", cpu="8", memory="16Gi") for i in range(NODES)]
    with tempfile.TemporaryDirectory(prefix="k8s-backend-warm-") as work:
        plane = KubeletControlPlane(work_dir=Path(work), nodes=nodes, run_processes=False)
        try:
            plane.start()
            return dict(plane.timings)
        finally:
            plane.stop()


def describe_requests(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    parts = ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda item: -item[1]))
    return f"{total} ({parts})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=1000, help="executor pods to allocate (default 1000)")
    parser.add_argument("--batch", type=int, default=100, help="spark.kubernetes.allocation.batch.size")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the pods")
    parser.add_argument("--cold", action="store_true", help="also time a cold build (~10 minutes)")
    parser.add_argument("--skip-allocation", action="store_true", help="only the build and start figures")
    parser.add_argument("--allocate", help=argparse.SUPPRESS)  # the child process: a JSON of settings
    args = parser.parse_args()
    if args.allocate is not None:
        print(json.dumps(allocate(json.loads(args.allocate))))
        return

    print(f"machine: {os.cpu_count()} CPUs")
    if args.cold:
        seconds, record = cold_build()
        print(f"cold build: {seconds:.0f} s into a fresh cache (per binary: {record})")
    else:
        record = recorded_build()
        if record is None:
            print("cold build: not measured (no build.json in the cache; run with --cold)")
        else:
            per_binary = ", ".join(
                f"{k} {v:.0f} s" for k, v in record.items() if isinstance(v, float) and k != "seconds"
            )
            when = record.get("finished")
            print(
                f"cold build: {record['seconds']:.0f} s recorded by the cached build of {when} ({per_binary})"
            )
    timings = warm_start()
    print(
        f"warm start: /readyz {timings['readyz']:.1f} s, default ServiceAccount "
        f"{timings['default_service_account']:.1f} s, {NODES} nodes Ready {timings['nodes_ready']:.1f} s"
    )
    if args.skip_allocation:
        return
    print(f"\n{args.pods} executor pods without processes, batch {args.batch}, backend in its own process:")
    print(f"{'API server':<12} {'created s':>9} {'running s':>9} {'backend CPU s':>14}  requests")
    for kind in ("kubernetes", "embedded"):
        figures = on_cluster(kind, args.pods, args.batch, args.timeout)
        if figures["running"] < args.pods:
            print(f"{kind:<12} only {figures['running']} running after {figures['seconds']:.0f} s")
            continue
        label = "real" if kind == "kubernetes" else "embedded"
        created = figures["created"] if figures["created"] is not None else float("nan")
        print(
            f"{label:<12} {created:>9.1f} {figures['seconds']:>9.1f} {figures['cpu']:>14.1f}  "
            f"{describe_requests(figures['requests'])}"
        )


if __name__ == "__main__":
    main()
