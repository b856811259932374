"""Adaptive allocation: time to N executor pods Running, adaptive on vs off, and the 429 share under a
server-side create-rate limit.

Run: ``python benchmarks/adaptive.py`` (options: ``--pods``, ``--repeat``, ``--rate``, ``--only SCENARIO``,
``--conf KEY=VALUE`` for every run). The cluster (the
embedded API server and a kubelet that marks pods Running without starting processes) runs in a child
process, as an API server would on its own machine; the backend runs here, driverless, over HTTP. Each
line prints the median time from ``start()`` to every executor pod Running, the pods created (exactly
the target means no over-allocation), the requests the backend sent, the creates answered 429, and the
CPU seconds of the driver (this process) and of the server (the child) during the run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from multiprocessing.connection import Connection
from typing import Any

APP_PREFIX = "spark-adaptive-bench"


def _serve(conn: Connection) -> None:
    """The child: a LocalCluster without processes, answering the parent's few commands."""
    from k8s_backend.kube.port import PODS
    from k8s_backend.local.cluster import LocalCluster

    with LocalCluster(run_processes=False, graceful_deletion=False) as cluster:
        fake = cluster.fake
        conn.send(cluster.spark_conf(image="spark:4.3.0"))
        while True:
            command, arg = conn.recv()
            if command == "stop":
                return
            if command == "rate":
                fake.limit_rate(float(arg), "create", PODS)
                conn.send(None)
            elif command == "stats":  # creates answered 429 so far, and the server's CPU seconds
                # The fake records every call with its body: forget them between runs, or each run finds a
                # bigger heap (slower garbage collections) than the one before.
                fake.reset_calls()
                conn.send({"refused": fake.rate_limited, "cpu": time.process_time()})


def _run(
    conf: dict[str, str], app_id: str, pods: int, adaptive: bool, extra: dict[str, str]
) -> dict[str, Any]:
    from k8s_backend.assembly.wiring import KubernetesClusterSchedulerBackend

    spark_conf = {
        **conf,
        "spark.executor.instances": str(pods),
        "spark.kubernetes.allocation.batch.adaptive": "true" if adaptive else "false",
        "spark.kubernetes.progress.interval": "0",
        **extra,
    }
    backend = KubernetesClusterSchedulerBackend.create(
        spark_conf, app_id=app_id, driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078"
    )
    counted = _count_requests(backend)
    cpu0 = time.process_time()
    start = time.monotonic()
    backend.start()
    try:
        while backend.parts.registered_executors() < pods:
            if time.monotonic() - start > 600:
                raise RuntimeError(f"{app_id}: not converged in 600 s")
            time.sleep(0.01)
        elapsed = time.monotonic() - start
        cpu = time.process_time() - cpu0
        created = backend.status()["allocator"]["executor_id_counter"]
    finally:
        backend.stop()
    return {"seconds": elapsed, "created": created, "cpu": cpu, "requests": counted()}


def _count_requests(backend: Any) -> Any:
    """A counter of the adapter's HTTP requests (the official client's pool), for the requests figure."""
    api = backend.parts.allocator._api
    pool = getattr(api, "_pool", None)
    if pool is None:  # not the official client's adapter: no figure
        return lambda: -1
    calls = [0]
    original = pool.request

    def request(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    pool.request = request
    return lambda: calls[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--rate", type=float, default=100.0, help="server creates/s for the 429 scenario")
    parser.add_argument("--conf", action="append", default=[], help="extra KEY=VALUE for every run")
    parser.add_argument("--only", choices=["off", "batch100", "on", "rate"], action="append")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(child,), daemon=True)
    server.start()
    conf = parent.recv()
    scenarios = [
        ("off", "adaptive off, Spark's defaults (batch 20 / 1 s)", False, {}),
        (
            "batch100",
            "adaptive off, batch.size=100",
            False,
            {"spark.kubernetes.allocation.batch.size": "100"},
        ),
        ("on", "adaptive on", True, {}),
        ("rate", f"adaptive on, server limits creates to {args.rate:g}/s", True, {}),
    ]
    common = dict(item.split("=", 1) for item in args.conf)
    print(f"{args.pods} executor pods Running, no processes; median of {args.repeat} run(s)")
    print(
        f"{'scenario':<48} {'time (s)':>9} {'created':>8} {'requests':>9} {'429s':>6} {'429 share':>9} "
        f"{'driver CPU (s)':>15} {'server CPU (s)':>15}"
    )
    run = 0
    try:
        for key, label, adaptive, extra in scenarios:
            if args.only and key not in args.only:
                continue
            if key == "rate":
                parent.send(("rate", args.rate))
                parent.recv()
            results = []
            for _ in range(args.repeat):
                run += 1
                app_id = f"{APP_PREFIX}-{run}"
                parent.send(("stats", None))
                before = parent.recv()
                result = _run(conf, app_id, args.pods, adaptive, {**extra, **common})
                parent.send(("stats", None))
                after = parent.recv()
                result["refused"] = after["refused"] - before["refused"]
                result["server_cpu"] = after["cpu"] - before["cpu"]
                results.append(result)
            m = {k: statistics.median(r[k] for r in results) for k in results[0]}
            share = m["refused"] / max(m["created"] + m["refused"], 1)
            print(
                f"{label:<48} {m['seconds']:>9.2f} {m['created']:>8.0f} {m['requests']:>9.0f} "
                f"{m['refused']:>6.0f} {share:>9.1%} {m['cpu']:>15.2f} {m['server_cpu']:>15.2f}   runs: "
                + " ".join(f"{r['seconds']:.2f}" for r in results),
                flush=True,
            )
            if key == "rate":
                parent.send(("rate", 0))
                parent.recv()
    finally:
        parent.send(("stop", None))
        server.join(30)


if __name__ == "__main__":
    main()
