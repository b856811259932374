"""Many applications at once: 20 backends asking for 100 executors each from one LocalCluster.

Run: ``python benchmarks/scale_apps.py [--apps 20] [--executors 100] [--qps 100] [--burst 20]``.

All backends run in this one process against one LocalCluster without processes (pods turn Running at
once), so they share the process's client-side rate limiter (``spark.kubernetes.client.qps`` /
``.burst``: one token bucket for every backend with the same settings). They are started together; the
script prints, per application, the seconds from start to all its executors Running, the pods it created
and the most it had live at once (exactness: both must equal the target), then:

- the rate limiter: the most pod creates the server received in any window of 1 s and of 5 s, against
  the bucket's bound (``burst + qps x window``), and the seconds callers waited for tokens;
- starvation: the slowest application's time against the median's.

Wall-clock figures on a shared machine; the checks (exact targets, the bound) are what to read.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import defaultdict
from typing import Any

import attrs

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.labels import SPARK_APP_ID_LABEL
from k8s_backend.kube.port import PODS
from k8s_backend.kube.rate_limit import shared_bucket
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local import LocalCluster

DRIVER_URL = "spark://CoarseGrainedScheduler@127.0.0.1:7078"
TIMEOUT = 600.0


@attrs.define
class AppPods:
    """What the watch saw of one application's executor pods."""

    created: set[str] = attrs.Factory(set)
    running: set[str] = attrs.Factory(set)
    gone: set[str] = attrs.Factory(set)
    max_live: int = 0
    converged_at: float | None = None


class Recorder:
    """Watches every pod (in process: no API request) and keeps per-application counts."""

    def __init__(self, cluster: LocalCluster, target: int) -> None:
        self._target = target
        self._cond = threading.Condition()
        self.apps: dict[str, AppPods] = defaultdict(AppPods)
        self._stream = cluster.fake.watch(PODS, "default", resource_version=cluster.fake.resource_version)
        threading.Thread(target=self._run, name="apps-recorder", daemon=True).start()

    def _run(self) -> None:
        for event in self._stream:
            meta = event.object.get("metadata") or {}
            app = (meta.get("labels") or {}).get(SPARK_APP_ID_LABEL)
            if event.type == "BOOKMARK" or app is None:
                continue
            name, phase = meta["name"], (event.object.get("status") or {}).get("phase")
            with self._cond:
                pods = self.apps[app]
                pods.created.add(name)
                if (
                    event.type == "DELETED"
                    or meta.get("deletionTimestamp")
                    or phase in ("Failed", "Succeeded")
                ):
                    pods.gone.add(name)
                elif phase == "Running":
                    pods.running.add(name)
                live = len(pods.created - pods.gone)
                pods.max_live = max(pods.max_live, live)
                if pods.converged_at is None and len(pods.running - pods.gone) >= self._target:
                    pods.converged_at = time.monotonic()
                self._cond.notify_all()

    def wait_all(self, apps: list[str], timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(
                lambda: all(self.apps[a].converged_at is not None for a in apps), timeout
            )

    def close(self) -> None:
        self._stream.close()


def conf(executors: int, qps: float, burst: int) -> dict[str, str]:
    return {
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.executor.instances": str(executors),
        "spark.executor.memory": "512m",
        "spark.kubernetes.client.qps": str(qps),
        "spark.kubernetes.client.burst": str(burst),
        "spark.kubernetes.progress.interval": "0",  # no progress lines from 20 backends
    }


def api(cluster: LocalCluster, qps: float, burst: int) -> OfficialKubernetesApi:
    """A client of the cluster with these rate-limit settings (LocalCluster.api() has the defaults)."""
    settings = ApiClientConf(master=cluster.url, oauth_token=cluster.token, qps=qps, burst=burst)
    environ = {"KUBECONFIG": str(cluster.kubeconfig), "HOME": str(cluster.work_dir)}
    return OfficialKubernetesApi.from_conf(settings, namespace_default="default", environ=environ)


def peak_creates(times: list[float], window: float) -> int:
    """The most creates in any ``window`` seconds (sliding over the creates themselves)."""
    times, peak, start = sorted(times), 0, 0
    for end, moment in enumerate(times):
        while times[start] <= moment - window:
            start += 1
        peak = max(peak, end - start + 1)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--apps", type=int, default=20)
    parser.add_argument("--executors", type=int, default=100, help="per application")
    parser.add_argument("--qps", type=float, default=100.0, help="spark.kubernetes.client.qps")
    parser.add_argument("--burst", type=int, default=20, help="spark.kubernetes.client.burst")
    args = parser.parse_args()
    names = [f"spark-scale-app-{n:02d}" for n in range(1, args.apps + 1)]
    with LocalCluster(run_processes=False) as cluster:
        recorder = Recorder(cluster, args.executors)
        clients = [api(cluster, args.qps, args.burst) for _ in names]
        failures: list[str] = []
        backends: list[Any] = [
            KubernetesClusterSchedulerBackend.create(
                conf(args.executors, args.qps, args.burst), app_id=name, driver_url=DRIVER_URL,
                api=client, on_application_failed=failures.append,
            )
            for name, client in zip(names, clients, strict=True)
        ]  # fmt: skip
        bucket = shared_bucket(args.qps, args.burst)
        waited_before = bucket.waited if bucket is not None else 0.0
        cluster.fake.reset_calls()
        began = time.monotonic()
        starters = [threading.Thread(target=backend.start) for backend in backends]
        for starter in starters:
            starter.start()
        converged = recorder.wait_all(names, TIMEOUT)
        elapsed = time.monotonic() - began
        time.sleep(2.0)  # creates that come late would show here as more pods than the target
        creates = [c.time for c in cluster.fake.calls_of("create", PODS)]
        for backend in backends:
            backend.stop()
        recorder.close()
        for client in clients:
            client.close()
    waited = (bucket.waited if bucket is not None else 0.0) - waited_before
    print(f"{args.apps} applications x {args.executors} executors, one LocalCluster (no processes), "
          f"client qps {args.qps:g} burst {args.burst}; all converged: {converged} in {elapsed:.1f} s; "
          f"failures: {len(failures)}")  # fmt: skip
    print(f"{'application':18} {'to converge (s)':>15} {'pods created':>13} {'max live':>9} {'exact':>6}")
    times = []
    for name in names:
        pods = recorder.apps[name]
        took = (pods.converged_at - began) if pods.converged_at is not None else float("nan")
        times.append(took)
        exact = len(pods.created) == pods.max_live == args.executors
        print(
            f"{name:18} {took:15.1f} {len(pods.created):13} {pods.max_live:9} {'yes' if exact else 'NO':>6}"
        )
    # The bucket paces when requests leave; the server sees them arrive, bunched by the network and the GIL.
    peaks = ", ".join(
        f"{peak_creates(creates, w)} in {w:g} s (bound {args.burst + w * args.qps:g})" for w in (1.0, 5.0)
    )
    print(f"rate limiter: most pod creates the server received: {peaks}; callers waited {waited:.1f} s"
          f" for tokens in all; {len(creates)} creates")  # fmt: skip
    finite = [t for t in times if t == t]
    if finite:
        median = statistics.median(finite)
        print(f"starvation: slowest {max(finite):.1f} s, median {median:.1f} s, fastest {min(finite):.1f} s "
              f"(slowest / median {max(finite) / median:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
