"""Side by side with Spark itself: Spark 4.3's JVM backend (``k8s://``) and k8s_backend (``pyk8s://``).

Run: ``python benchmarks/compare_spark.py [--repeat 2] [--only startup alloc200 ...] [--quick]``.

Both backends run against the same embedded LocalCluster, back to back and interleaved (the order
alternates from one repetition to the next), each driver in a fresh Python process with its own JVM.
One table of medians and the ratio ours/Spark is printed at the end. Scenarios (``--only``):

- ``startup``: session start -> N executors registered (N = 2, 4), executor processes really run;
  the API requests the server answered over the whole run (start to stopped, pods deleted).
- ``alloc200`` / ``alloc1000``: a cluster without processes (pods turn Running at once); N executors
  at Spark's defaults and at ``batch.size=50``: first -> last create, first create -> all Running,
  pods created for the target (counted 2 s after it was reached), driver CPU per pod (JVM + Python,
  start-up included), requests.
- ``adaptive``: 1000 pods with ``spark.kubernetes.allocation.batch.adaptive=true`` against Spark at
  ``batch.size=100`` (and at its defaults when ``alloc1000`` ran too); "n/a" where this k8s_backend
  does not know the key.
- ``recovery``: 2 executors; one pod fails with exit 137 (what the kubelet reports for a SIGKILL) ->
  replacement pod created; then a pod is deleted while every watch is dropped and the history compacted,
  so that resuming the watch is answered 410 Gone -> replacement pod created.

With ``--api real`` the comparison runs on the real kube-apiserver with KWOK nodes instead, against a
bare client's time: ``real_api.py`` (its own options follow, e.g. ``--api real --pods 1000 --repeat 2``).

Absolute times depend on the machine (and on its load); only the ratios of one run mean something.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections import defaultdict

from _harness import Driver, PodClock, clear_pods, request_kinds, requests_served, spark_conf

from k8s_backend.conf.keys import KEYS_BY_NAME
from k8s_backend.kube.port import PODS
from k8s_backend.local import LocalCluster

ADAPTIVE_KEY = "spark.kubernetes.allocation.batch.adaptive"
NO_WAIT = {"spark.scheduler.minRegisteredResourcesRatio": "0"}  # no executor registers without processes
SETTLE = 2.0  # seconds after the target is reached in which late (surplus) creates are still counted
SIDES = ("spark", "ours")
SCENARIOS = ("startup", "alloc200", "alloc1000", "adaptive", "recovery")
QUICK = ("startup", "alloc200", "recovery")

Figures = dict[str, float]


def startup(cluster: LocalCluster, ours: bool, executors: int) -> Figures:
    before = requests_served(cluster)
    master, conf = spark_conf(cluster, ours, **{"spark.executor.instances": str(executors)})
    driver = Driver(master, conf, wait_registered=executors)
    try:
        started = driver.expect("started")
        registered = driver.expect("registered")
        if registered["count"] < executors:
            raise RuntimeError(f"only {registered['count']} of {executors} executors registered")
        driver.finish()
        cluster.wait_until(lambda: not cluster.fake.objects(PODS, "default"), 60)
        requests = requests_served(cluster) - before
        side = "ours" if ours else "spark"
        print(f"  {side}, {executors} executors: {requests} requests: {request_kinds(cluster, before)}")
    finally:
        driver.kill()
        clear_pods(cluster)
    return {
        f"session start -> {executors} executors registered (s)": registered["t"] - started["t0"],
        f"API requests, {executors} executors (whole run)": requests,
    }


def allocation(
    cluster: LocalCluster, clock: PodClock, ours: bool, target: int, label: str, **props: str
) -> Figures:
    clock.reset()
    before = requests_served(cluster)
    master, conf = spark_conf(cluster, ours, **{"spark.executor.instances": str(target), **NO_WAIT, **props})
    driver = Driver(master, conf)
    try:
        app = driver.expect("started")["app"]
        if not clock.wait_for(lambda: clock.running_live(app) >= target, 600):
            raise RuntimeError(f"{label}: {clock.running_live(app)} of {target} pods Running after 600 s")
        done = time.monotonic()
        time.sleep(SETTLE)
        created = clock.created_after(app)
        cpu = driver.finish()
        requests = requests_served(cluster) - before
    finally:
        driver.kill()
        clear_pods(cluster)
    first, last = created[0], max(c for c in created if c <= done)
    return {
        f"{label}: first -> last create (s)": last - first,
        f"{label}: first create -> all Running (s)": done - first,
        f"{label}: pods created": len(created),
        f"{label}: driver CPU per pod (ms, JVM + Python)": cpu / target * 1e3,
        f"{label}: API requests (whole run)": requests,
    }


def fail_one_pod(cluster: LocalCluster) -> None:
    """The first live executor pod ends as the kubelet reports a SIGKILLed container (exit 137)."""
    pods = [
        p for p in cluster.fake.objects(PODS, "default") if (p.get("status") or {}).get("phase") == "Running"
    ]
    name = sorted(p["metadata"]["name"] for p in pods)[0]
    terminated = {"exitCode": 137, "reason": "Error"}
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "spark-kubernetes-executor", "ready": False, "restartCount": 0,
             "state": {"terminated": terminated}},
        ],
    }  # fmt: skip
    cluster.fake.patch_status(PODS, "default", name, status)


def recovery(cluster: LocalCluster, clock: PodClock, ours: bool) -> Figures:
    clock.reset()
    master, conf = spark_conf(cluster, ours, **{"spark.executor.instances": "2", **NO_WAIT})
    driver = Driver(master, conf)
    figures: Figures = {}
    try:
        app = driver.expect("started")["app"]
        clock.wait_for(lambda: clock.running_live(app) >= 2, 120)
        time.sleep(1.0)
        killed = time.monotonic()
        fail_one_pod(cluster)
        replaced = clock.wait_for(lambda: bool(clock.created_after(app, killed)), 120)
        if replaced:
            figures["executor exit 137 -> replacement pod (s)"] = clock.created_after(app, killed)[0] - killed
        clock.wait_for(lambda: clock.running_live(app) >= 2, 120)
        time.sleep(1.0)
        fake = cluster.fake
        victim = sorted(p["metadata"]["name"] for p in fake.objects(PODS, "default"))[0]
        gone = time.monotonic()
        fake.delete(PODS, "default", victim, grace_period_seconds=0)
        fake.compact()
        fake.drop_watches()  # every watch resumes from a compacted resourceVersion: 410 Gone
        clock.restart()
        if clock.wait_for(lambda: bool(clock.created_after(app, gone)), 120):
            figures["pod deleted, watch resume 410 -> replacement pod (s)"] = (
                clock.created_after(app, gone)[0] - gone
            )
        driver.finish()
    finally:
        driver.kill()
        clear_pods(cluster)
    return figures


def adaptive_supported() -> bool:
    return ADAPTIVE_KEY in KEYS_BY_NAME


def run_scenario(
    name: str, side: str, clusters: dict[str, LocalCluster], clock: PodClock | None, quick: bool
) -> Figures:
    ours = side == "ours"
    if name == "startup":
        figures = startup(clusters["processes"], ours, 2)
        return figures if quick else {**figures, **startup(clusters["processes"], ours, 4)}
    assert clock is not None
    lean = clusters["no processes"]
    if name in ("alloc200", "alloc1000"):
        target = int(name.removeprefix("alloc"))
        figures = allocation(lean, clock, ours, target, f"{target} pods, defaults")
        if quick:
            return figures
        return {
            **figures,
            **allocation(lean, clock, ours, target, f"{target} pods, batch 50",
                         **{"spark.kubernetes.allocation.batch.size": "50"}),
        }  # fmt: skip
    if name == "adaptive":
        if not ours:
            return allocation(lean, clock, False, 1000, "1000 pods, Spark batch 100 / ours adaptive",
                              **{"spark.kubernetes.allocation.batch.size": "100"})  # fmt: skip
        if not adaptive_supported():
            return {}
        return allocation(lean, clock, True, 1000, "1000 pods, Spark batch 100 / ours adaptive",
                          **{ADAPTIVE_KEY: "true"})  # fmt: skip
    return recovery(lean, clock, ours)


def render(results: dict[str, dict[str, list[float]]], repeat: int) -> str:
    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}" if value < 100 else f"{value:.0f}"

    adaptive = "1000 pods, Spark batch 100 / ours adaptive: first create -> all Running (s)"
    defaults = "1000 pods, defaults: first create -> all Running (s)"
    if adaptive in results and defaults in results:  # the same ours-adaptive runs against Spark's defaults
        key = "1000 pods, Spark defaults / ours adaptive: first create -> all Running (s)"
        results[key] = {"spark": results[defaults]["spark"], "ours": results[adaptive]["ours"]}
    width = max((len(k) for k in results), default=10)
    lines = [
        f"medians of {repeat} run(s) per side; ratio = k8s_backend / Spark (a Markdown table)",
        f"| {'scenario':{width}} | {'Spark 4.3':>10} | {'k8s_backend':>11} | {'ratio':>6} |",
        f"|{'-' * (width + 2)}|{'-' * 11}:|{'-' * 12}:|{'-' * 7}:|",
    ]
    for key, sides in results.items():
        spark, ours = median(sides["spark"]), median(sides["ours"])
        ratio = f"{ours / spark:.2f}" if spark and ours is not None else "n/a"
        lines.append(f"| {key:{width}} | {cell(spark):>10} | {cell(ours):>11} | {ratio:>6} |")
    return "\n".join(lines)


def main() -> None:
    if "--api" in sys.argv[1:]:
        at = sys.argv.index("--api")
        api = sys.argv[at + 1] if at + 1 < len(sys.argv) else ""
        if api not in ("embedded", "real"):
            raise SystemExit("--api takes 'embedded' (the default) or 'real' (kube-apiserver + KWOK nodes)")
        rest = sys.argv[1:at] + sys.argv[at + 2 :]
        if api == "real":
            import real_api

            real_api.main(rest)
            return
        sys.argv[1:] = rest
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=2, help="runs per side and scenario (default 2)")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, help="scenarios to run (default: all)")
    parser.add_argument(
        "--quick", action="store_true", help=f"one run of {', '.join(QUICK)}: 2 executors, defaults (~3 min)"
    )
    args = parser.parse_args()
    chosen = args.only or (QUICK if args.quick else SCENARIOS)
    repeat = 1 if args.quick else args.repeat
    if "adaptive" in chosen and not adaptive_supported():
        print(f"note: this k8s_backend does not know {ADAPTIVE_KEY}: its adaptive figures are n/a")
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"spark": [], "ours": []})
    with contextlib.ExitStack() as stack:
        clusters: dict[str, LocalCluster] = {}
        clock = None
        if "startup" in chosen:
            clusters["processes"] = stack.enter_context(LocalCluster(stop_grace=2.0))
        if set(chosen) - {"startup"}:
            lean = clusters["no processes"] = stack.enter_context(LocalCluster(run_processes=False))
            clock = PodClock(lean)
            stack.callback(clock.close)
        for run in range(repeat):
            for name in chosen:
                for side in SIDES if run % 2 == 0 else SIDES[::-1]:
                    began = time.monotonic()
                    figures = run_scenario(name, side, clusters, clock, args.quick)
                    for key, value in figures.items():
                        results[key][side].append(value)
                    print(
                        f"run {run + 1}/{repeat} {name} {side}: {time.monotonic() - began:.0f} s", flush=True
                    )
    print(render(dict(results), repeat))


if __name__ == "__main__":
    main()
