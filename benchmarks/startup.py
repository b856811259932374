"""Start-up time on ``pyk8s://local``: from session start to all executors registered, for 2 and 4 executors.

Run: ``python benchmarks/startup.py [--repeat 3] [--counts 2 4] [--plain-jvm]``. Every measurement runs in
a fresh Python process, so it includes launching the driver JVM, as a user's first session does. The
phases: the driver JVM up with the bridge (``prepare``), the SparkContext created (it waits for the
backend's registered-resources check), and every executor registered with the driver. The executor pods
are local processes of the embedded cluster: on a 2-core machine the executor JVMs share the CPUs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

MASTER = "pyk8s://local"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
PHASES = ("jvm", "context", "registered")


def measure_once(executors: int, fast_jvm: bool, timeout: float = 300.0) -> dict[str, float]:
    """One session in this process: seconds from the start to each phase."""
    from pyspark.sql import SparkSession

    from k8s_backend.spark import prepare

    conf = {
        "spark.executor.instances": str(executors),
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if fast_jvm:
        conf["spark.driver.extraJavaOptions"] = FAST_JVM
        conf["spark.executor.extraJavaOptions"] = FAST_JVM
    start = time.monotonic()
    prepare(MASTER, conf)
    jvm = time.monotonic() - start
    spark = SparkSession.builder.appName("startup-benchmark").getOrCreate()
    context = time.monotonic() - start
    status = spark.sparkContext._jsc.sc()
    pause, deadline = threading.Event(), time.monotonic() + timeout
    while status.getExecutorMemoryStatus().size() - 1 < executors and time.monotonic() < deadline:
        pause.wait(0.05)  # the driver is counted too
    registered = time.monotonic() - start
    if status.getExecutorMemoryStatus().size() - 1 < executors:
        raise SystemExit(f"only {status.getExecutorMemoryStatus().size() - 1} executors after {timeout} s")
    spark.stop()
    return {"jvm": jvm, "context": context, "registered": registered}


def measure_in_fresh_process(executors: int, fast_jvm: bool) -> dict[str, float]:
    command = [sys.executable, __file__, "--one", str(executors)]
    if not fast_jvm:
        command.append("--plain-jvm")
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise SystemExit(f"measurement failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--counts", type=int, nargs="+", default=[2, 4], help="executor counts to measure")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per count (median shown)")
    parser.add_argument("--plain-jvm", action="store_true", help=f"without {FAST_JVM}")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single measurement (child process)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure_once(args.one, not args.plain_jvm)))
        return

    flags = "default JVM flags" if args.plain_jvm else FAST_JVM
    print(f"session start -> executors registered on {MASTER}, {args.repeat} run(s) each, {flags}")
    print(
        f"{'executors':>9} {'JVM up (s)':>11} {'context (s)':>12} {'all registered (s)':>19} {'runs (s)':>20}"
    )
    for count in args.counts:
        runs = [measure_in_fresh_process(count, not args.plain_jvm) for _ in range(args.repeat)]
        median = {phase: statistics.median(run[phase] for run in runs) for phase in PHASES}
        each = " ".join(f"{run['registered']:.1f}" for run in runs)
        print(
            f"{count:>9} {median['jvm']:>11.1f} {median['context']:>12.1f} "
            f"{median['registered']:>19.1f} {each:>20}",
            flush=True,
        )


if __name__ == "__main__":
    main()
