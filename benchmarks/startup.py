"""Context start-up, from ``getOrCreate()`` to N executors registered, against Spark's own modes.

Run: ``python benchmarks/startup.py [--executors 2] [--repeat 3] [--contexts 3] [--modes ...]``.

Each mode runs in ``--repeat`` fresh Python processes (interleaved, so that the machine's load falls on
every mode alike); each process starts ``--contexts`` contexts one after the other, as a test suite with
a context per test class does. The first context pays for the driver JVM (and for a cluster where there
is one); the later ones show what a process reuses. Modes:

- ``pyk8s``: ``pyk8s://local``, the warm embedded cluster kept by the process (:mod:`k8s_backend.local.warm`);
- ``pyk8s-cold``: ``pyk8s://local`` with ``K8S_BACKEND_LOCAL_IDLE_TIMEOUT=0``: a new cluster for every
  context, as before the warm cluster existed (the "before" figures);
- ``local-cluster``: PySpark's own ``local-cluster[N,1,1024]``, which also starts real executor JVMs;
- ``k8s``: Spark's own ``k8s://`` backend on a LocalCluster the process starts once (its start counted
  in the first context).

Every mode runs with the same properties (executor memory 512m, no UI). The table gives the medians and
the ratios to ``local-cluster`` and to ``k8s`` for the first and for the later contexts. Absolute times
depend on the machine and its load; the ratios of one run are what to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

MODES = ("pyk8s", "pyk8s-cold", "local-cluster", "k8s")
COMMON = {
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def wait_registered(spark: Any, executors: int, timeout: float) -> None:
    status = spark.sparkContext._jsc.sc()
    pause, deadline = threading.Event(), time.monotonic() + timeout
    while status.getExecutorMemoryStatus().size() - 1 < executors:  # the driver is counted too
        if time.monotonic() > deadline:
            raise SystemExit(f"{executors} executors not registered after {timeout:.0f} s")
        pause.wait(0.02)


def run_contexts(mode: str, executors: int, contexts: int, timeout: float = 600.0) -> list[float]:
    """In this process: seconds from each context's start to its executors registered."""
    from pyspark.sql import SparkSession

    conf = dict(COMMON)
    cluster: Any = None
    if mode in ("pyk8s", "pyk8s-cold"):
        import k8s_backend.spark  # noqa: F401  (the builder hook)

        master = "pyk8s://local"
        conf["spark.executor.instances"] = str(executors)
    elif mode == "local-cluster":
        master = f"local-cluster[{executors},1,1024]"
    else:
        master = ""
        conf["spark.executor.instances"] = str(executors)
    figures = []
    for index in range(contexts):
        start = time.monotonic()
        if mode == "k8s" and cluster is None:
            from k8s_backend.local import LocalCluster

            cluster = LocalCluster(stop_grace=2.0).start()
            conf.update({k: v for k, v in cluster.spark_conf().items() if k != "spark.master"})
            master = cluster.spark_k8s_master
        builder = SparkSession.builder.master(master).appName(f"startup-{mode}-{index}")
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        wait_registered(spark, executors, timeout)
        figures.append(time.monotonic() - start)
        spark.stop()
    if cluster is not None:
        cluster.stop()
    return figures


def in_fresh_process(mode: str, executors: int, contexts: int) -> list[float]:
    command = [sys.executable, __file__, "--child", mode, "--executors", str(executors)]
    command += ["--contexts", str(contexts)]
    env = dict(os.environ)
    if mode == "pyk8s-cold":
        env["K8S_BACKEND_LOCAL_IDLE_TIMEOUT"] = "0"
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{mode} failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    figures: list[float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def ratio(ours: float | None, theirs: float | None) -> str:
    return f"{ours / theirs:.2f}x" if ours is not None and theirs else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--executors", type=int, default=2, help="N: executors per context")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per mode")
    parser.add_argument("--contexts", type=int, default=3, help="contexts per process (first + later)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_contexts(args.child, args.executors, args.contexts)))
        return

    first: dict[str, list[float]] = {mode: [] for mode in args.modes}
    later: dict[str, list[float]] = {mode: [] for mode in args.modes}
    for round_ in range(args.repeat):
        order = args.modes if round_ % 2 == 0 else list(reversed(args.modes))
        for mode in order:
            figures = in_fresh_process(mode, args.executors, args.contexts)
            first[mode].append(figures[0])
            later[mode].extend(figures[1:])
            print(f"  {mode}: " + " ".join(f"{f:.1f}" for f in figures), flush=True)

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    print(
        f"\ncontext start -> {args.executors} executors registered, medians over {args.repeat} processes "
        f"x {args.contexts} contexts"
    )
    print(f"{'mode':<14} {'first (s)':>10} {'later (s)':>10} {'first/lc':>9} {'later/lc':>9} "
          f"{'first/k8s':>10} {'later/k8s':>10}")  # fmt: skip
    base_lc = (median(first.get("local-cluster", [])), median(later.get("local-cluster", [])))
    base_k8s = (median(first.get("k8s", [])), median(later.get("k8s", [])))
    for mode in args.modes:
        f, lt = median(first[mode]), median(later[mode])
        print(
            f"{mode:<14} {f or 0:>10.1f} {lt or 0:>10.1f} {ratio(f, base_lc[0]):>9} "
            f"{ratio(lt, base_lc[1]):>9} {ratio(f, base_k8s[0]):>10} {ratio(lt, base_k8s[1]):>10}"
        )


if __name__ == "__main__":
    main()
