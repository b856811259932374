"""Spark 4.3's JVM backend and k8s_backend on the real kube-apiserver with KWOK nodes, against a bare client.

Run: ``python benchmarks/real_api.py [--pods 1000] [--repeat 2] [--streams 4 8 16] [--nodes 4] [--apf]
[--unlimited-qps] [--driver-memory 4g]``.

One real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager; see
``_kwok.py``) with KWOK nodes: pods are bound by the scheduler and turned Running by KWOK, no process
runs. Per repetition, interleaved (the order of the drivers alternates), each driver in a fresh Python
process with its own JVM, N executor pods for:

- Spark 4.3 (``k8s://``) at its defaults and at ``spark.kubernetes.allocation.batch.size=100``;
- k8s_backend (``pyk8s://``) at its defaults and with ``spark.kubernetes.allocation.batch.adaptive=true``;
- then the server's own limit: a bare client creating the same pod spec (the last driver's, renamed)
  from S parallel streams, each one keep-alive HTTPS connection; every S of ``--streams`` is run and
  the best is the denominator.

For each: first create -> all N Running (as this benchmark's pod watch saw them), first -> last create
(what is left after it is the scheduler's binds and KWOK's status writes catching up), pods created (counted
2 s after the target), pods its stop() left (neither deleted nor being deleted) when the driver exited and
30 s later, the driver's requests by kind and its 429 answers (from the API server's audit log, so Spark's
are counted as ours are), driver CPU (JVM + Python, start-up included) and peak RSS, and where the rest of
the machine's CPU went meanwhile:
kube-apiserver, etcd, the scheduler and controller manager, KWOK (from the driver's launch, or the bare
client's first create, to all Running).

kube-scheduler's client is rate-limited to 50 requests a second by default, so it binds at most about 50
pods a second, whoever creates them: on an idle server that is every driver's floor. ``--unlimited-qps``
lifts that limit (and the controller manager's), as kwokctl's ``--disable-qps-limits`` does for its scale
clusters; the floor is then the API server itself.
Absolute times depend on the machine and its load; only the ratios of one run mean something.

``--apf`` runs API Priority and Fairness's scenario instead: a FlowSchema puts the drivers' ServiceAccount
(``default/spark-driver``, examples/kubernetes/driver-rbac.yaml plus the ``edit`` ClusterRole for Spark's
own client) in a priority level of 2 seats that answers 429 to whatever does not fit (see
:data:`PRIORITY_LEVELS`), and Spark at batch 100 and k8s_backend adaptive run with a token of that account.
Each side adds the share of its requests answered 429 and the level's rejections (the server's
``apiserver_flowcontrol_rejected_requests_total``). No bare client: it runs as the admin, whom APF exempts.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import re
import ssl
import statistics
import subprocess
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from _harness import Driver, PodTimes, spark_conf_base
from _kwok import BENCH_AGENT, KwokCluster

from k8s_backend.kube.masters import pyk8s_url
from k8s_backend.local.control_plane.credentials import ADMIN

NO_WAIT = {"spark.scheduler.minRegisteredResourcesRatio": "0"}  # no executor registers: nothing runs
DRIVER_MEMORY: dict[str, str] = {}  # --driver-memory: spark.driver.memory for every driver
SETTLE = 2.0
LEFT_WAIT = 30.0  # seconds for the pod watch to see a stopped driver's pods deleted
SIDES: dict[str, tuple[bool, dict[str, str]]] = {
    "Spark 4.3, defaults": (False, {}),
    "Spark 4.3, batch.size=100": (False, {"spark.kubernetes.allocation.batch.size": "100"}),
    "k8s_backend, defaults": (True, {}),
    "k8s_backend, adaptive": (True, {"spark.kubernetes.allocation.batch.adaptive": "true"}),
}
SHORT = dict(zip(("spark-defaults", "spark-batch100", "ours-defaults", "ours-adaptive"), SIDES, strict=True))
BARE = "bare client"
RUNNING = "first create -> all Running (s)"
PODS_PATH = "/api/v1/namespaces/default/pods"

Figures = dict[str, float]

RBAC_FILE = Path(__file__).resolve().parent.parent / "examples" / "kubernetes" / "driver-rbac.yaml"
ACCOUNT = "spark-driver"
APF_USER = f"system:serviceaccount:default:{ACCOUNT}"
APF_LEVEL = "spark-drivers-tight"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
# A level's seats are ceil(600 * its shares / every level's shares); the built-in levels hold 245 shares.
# Other tenants' level (no FlowSchema uses it) takes 150 more, so the drivers' 1 share is ceil(600 / 396)
# = 2 seats, nothing lent or borrowed, no queue: APF answers 429 at once to what does not fit.
REJECT = {"type": "Reject"}
PRIORITY_LEVELS = [
    {"metadata": {"name": "other-tenants"},
     "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 150, "limitResponse": REJECT}}},
    {"metadata": {"name": APF_LEVEL},
     "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                             "borrowingLimitPercent": 0, "limitResponse": REJECT}}},
]  # fmt: skip
DRIVERS = {"kind": "ServiceAccount", "serviceAccount": {"name": ACCOUNT, "namespace": "default"}}
FLOW_SCHEMA = {
    "metadata": {"name": "spark-drivers"},
    "spec": {
        "priorityLevelConfiguration": {"name": APF_LEVEL},
        "matchingPrecedence": 100,  # before the built-in service-accounts schema (9000)
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{
            "subjects": [DRIVERS],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"],
                               "clusterScope": True}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }],
    },
}  # fmt: skip


class Http:
    """HTTPS requests to the cluster as the admin, with the benchmark's User-Agent (left out of counts)."""

    def __init__(self, cluster: KwokCluster) -> None:
        split = urlsplit(cluster.url)
        self.host, self.port = split.hostname or "127.0.0.1", split.port or 443
        self.context = ssl.create_default_context(cafile=cluster.control_plane.ca_file)
        self.headers = {
            "Authorization": f"Bearer {cluster.control_plane.token}",
            "User-Agent": BENCH_AGENT,
            "Content-Type": "application/json",
        }

    def connect(self, timeout: float | None = 60.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)

    def call(self, method: str, path: str, timeout: float = 60.0, decode: bool = True) -> Any:
        connection = self.connect(timeout)
        try:
            connection.request(method, path, headers=self.headers)
            response = connection.getresponse()
            body = response.read()
            return json.loads(body) if decode else response.status
        finally:
            connection.close()


class RealPodClock:
    """A pod watch over HTTPS on a thread: per executor pod, when it was seen created and Running."""

    def __init__(self, http_: Http) -> None:
        self._http = http_
        self._cond = threading.Condition()
        self.pods: dict[tuple[str, str], PodTimes] = {}
        self.samples: dict[str, dict[str, Any]] = {}  # the first pod seen of each application
        # Running and not gone, and not gone in any phase, per application: kept as events arrive, since
        # the waits read them on every event and a count over every pod seen (tens of thousands at
        # --pods 10000) would load the machine.
        self._running: Counter[str] = Counter()
        self._present: Counter[str] = Counter()
        threading.Thread(target=self._run, name="pod-clock", daemon=True).start()

    def _run(self) -> None:
        with contextlib.suppress(OSError, http.client.HTTPException):  # the cluster stopped: the end
            self._watch()

    def _watch(self) -> None:
        version = self._http.call("GET", f"{PODS_PATH}?limit=1")["metadata"]["resourceVersion"]
        while True:  # the server ends a watch after a while: resumed from the last version seen
            connection = self._http.connect(timeout=None)
            query = f"watch=1&resourceVersion={version}&labelSelector=spark-role%3Dexecutor"
            connection.request("GET", f"{PODS_PATH}?{query}", headers=self._http.headers)
            response = connection.getresponse()
            for line in iter(response.readline, b""):
                event = json.loads(line)
                if event["type"] == "ERROR":  # 410 Gone: start from now (no run is under way then)
                    version = self._http.call("GET", f"{PODS_PATH}?limit=1")["metadata"]["resourceVersion"]
                    break
                version = event["object"]["metadata"]["resourceVersion"]
                self._record(event["type"], event["object"], time.monotonic())
            connection.close()

    def _record(self, kind: str, pod: dict[str, Any], now: float) -> None:
        meta = pod["metadata"]
        app = (meta.get("labels") or {}).get("spark-app-selector", "")
        with self._cond:
            times = self.pods.get((app, meta["name"]))
            if times is None:
                times = self.pods[app, meta["name"]] = PodTimes(app=app, created=now)
                self._present[app] += 1
            self.samples.setdefault(app, pod)
            if (pod.get("status") or {}).get("phase") == "Running" and times.running is None:
                times.running = now
                if times.gone is None:
                    self._running[app] += 1
            if (kind == "DELETED" or meta.get("deletionTimestamp")) and times.gone is None:
                times.gone = now
                self._present[app] -= 1
                if times.running is not None:
                    self._running[app] -= 1
            self._cond.notify_all()

    def running(self, app: str) -> int:
        with self._cond:
            return self._running[app]

    def present(self, app: str) -> int:
        """The application's pods seen and neither deleted nor being deleted, in any phase."""
        with self._cond:
            return self._present[app]

    def created(self, app: str) -> list[float]:
        with self._cond:
            return sorted(t.created for t in self.pods.values() if t.app == app)

    def wait_for(self, predicate: Any, timeout: float) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(predicate, timeout))


def clear_pods(http_: Http, timeout: float = 900.0) -> None:
    """Delete every pod left (a stopped driver deletes its own) and wait until none is left. A delete of
    thousands of pods can outlast the server's request timeout (504, part done), so it is sent again."""
    deadline = time.monotonic() + timeout
    while http_.call("GET", f"{PODS_PATH}?limit=1")["items"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"pods still present {timeout:.0f} s after deleting them all")
        # Past the server's own 60 s request timeout (it answers 504, part done); its answer, every pod
        # deleted, is not decoded. A timeout or a cut answer: asked again.
        with contextlib.suppress(OSError, http.client.HTTPException):
            http_.call("DELETE", f"{PODS_PATH}?gracePeriodSeconds=0", timeout=90.0, decode=False)
        time.sleep(0.5)


def restrict_drivers(cluster: KwokCluster) -> str:
    """The drivers' ServiceAccount, its roles, the tight priority level and its FlowSchema; its token,
    once the server runs that account's requests in the tight level."""
    cp = cluster.control_plane

    def create(path: str, body: dict[str, Any]) -> dict[str, Any]:
        code, answer = cp.request("POST", path, body=body)
        if code != 201:
            raise RuntimeError(f"POST {path}: {code} {answer}")
        return dict(answer)

    paths = {"ServiceAccount": "/api/v1/namespaces/default/serviceaccounts",
             "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
             "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"}  # fmt: skip
    for document in yaml.safe_load_all(RBAC_FILE.read_text(encoding="utf-8")):
        create(paths[document["kind"]], document)
    # Spark's own client also reads and deletes its ConfigMap by name: the edit role covers both sides.
    create(paths["RoleBinding"], {"metadata": {"name": "spark-driver-edit"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
           "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}]})  # fmt: skip
    for level in PRIORITY_LEVELS:
        create(f"{FLOWCONTROL}/prioritylevelconfigurations", level)
    create(f"{FLOWCONTROL}/flowschemas", FLOW_SCHEMA)
    token = create(f"/api/v1/namespaces/default/serviceaccounts/{ACCOUNT}/token",
                   {"spec": {"expirationSeconds": 86400}})["status"]["token"]  # fmt: skip
    deadline = time.monotonic() + 60
    while apf_metric(cluster, "nominal_limit_seats") != 2:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the priority level {APF_LEVEL} did not get 2 seats within 60 s")
        time.sleep(0.5)
    return str(token)


def apf_metric(cluster: KwokCluster, name: str) -> int:
    """An apiserver_flowcontrol_* metric of the drivers' priority level, summed over its other labels."""
    code, text = cluster.control_plane.request("GET", "/metrics")
    if code != 200:
        raise RuntimeError(f"GET /metrics: {code}")
    pattern = re.compile(
        rf'^apiserver_flowcontrol_{name}{{[^}}]*priority_level="{APF_LEVEL}"[^}}]*}} (\S+)$', re.M
    )
    return sum(int(float(value)) for value in pattern.findall(text))


def patience(pods: int) -> float:
    """How long a run may take to have ``pods`` Running: Spark's defaults create 20 a round of about 1 s
    (1.5 s a round on a loaded server: 10,000 pods in about 12 minutes), with room to spare."""
    return max(1200.0, 0.25 * pods)


def warm_up(cluster: KwokCluster, clock: RealPodClock, http_: Http, token: str | None) -> None:
    """One unmeasured k8s_backend driver of 10 pods, so that what the first one on a machine does once
    falls outside the measured runs: building the bridge jar, recording the driver JVM's class archive
    (:mod:`k8s_backend.spark.class_sharing`; Spark's drivers have none)."""
    side = next((s for s in SIDES if SIDES[s][0]), None)
    if side is not None:
        figures = drive(cluster, clock, http_, side, 10, token)
        cpu = figures["driver CPU (s, JVM + Python)"]
        print(f"warm-up ({side}, 10 pods): driver CPU {cpu:.1f} s", flush=True)


def drive(
    cluster: KwokCluster, clock: RealPodClock, http_: Http, side: str, pods: int, token: str | None = None
) -> Figures:
    """One driver to ``pods`` Running; ``token``: the drivers' account's (``--apf``), else the admin's."""
    ours, props = SIDES[side]
    master = pyk8s_url(cluster.url) if ours else "k8s://" + cluster.url
    conf = {**spark_conf_base(), **cluster.spark_conf(), "spark.executor.instances": str(pods), **NO_WAIT,
            "spark.kubernetes.executor.podNamePrefix": "bench", **DRIVER_MEMORY, **props}  # fmt: skip
    if token is not None:
        for family in ("spark.kubernetes.authenticate.", "spark.kubernetes.authenticate.submission."):
            conf[family + "oauthToken"] = token
    rejected = apf_metric(cluster, "rejected_requests_total") if token is not None else 0
    offset = cluster.audit_offset()
    cpu = cluster.cpu_seconds()
    driver = Driver(master, conf)
    try:
        app = driver.expect("started")["app"]
        if not clock.wait_for(lambda: clock.running(app) >= pods, patience(pods)):
            raise RuntimeError(f"{side}: {clock.running(app)} of {pods} Running in {patience(pods):.0f} s")
        done = time.monotonic()
        cluster_cpu = cluster_share(cpu, cluster.cpu_seconds())
        time.sleep(SETTLE)
        created = clock.created(app)
        driver.finish()
        # What stop() had not deleted when the driver exited (a client-mode k8s_backend's pods then go
        # with its heartbeat Lease, through the garbage collector), and what was left once the pod watch
        # caught up: pods neither deleted nor being deleted.
        at_exit = clock.present(app)
        clock.wait_for(lambda: clock.present(app) == 0, LEFT_WAIT)
        left = clock.present(app)
    finally:
        driver.kill()
    clear_pods(http_)
    kinds, throttled = cluster.requests_since(offset, ADMIN if token is None else APF_USER)
    usage = driver.usage
    print(f"  {side}: requests {dict(sorted(kinds.items()))}", flush=True)
    apf: Figures = {}
    if token is not None:
        apf = {"429 share (% of requests)": 100.0 * throttled / max(1, sum(kinds.values())),
               "APF rejections": apf_metric(cluster, "rejected_requests_total") - rejected}  # fmt: skip
    return {
        **apf,
        "first create -> all Running (s)": done - created[0],
        "first -> last create (s)": max(c for c in created if c <= done) - created[0],
        "pods created": len(created),
        "pods at driver exit": at_exit,
        "pods left after stop": left,
        "API requests": sum(kinds.values()),
        "create pods": kinds.get("create pods", 0),
        "429 answers": throttled,
        "driver CPU (s, JVM + Python)": usage["python"] + usage["jvm"],
        "driver peak RSS (MiB, JVM + Python)": usage["rss_python"] + usage["rss_jvm"],
        **cluster_cpu,
    }


def cluster_share(before: dict[str, float], after: dict[str, float]) -> Figures:
    """The cluster's CPU seconds between two :meth:`KwokCluster.cpu_seconds` readings, by part: where the
    time goes besides the driver (the run's CPU on a 2-core machine is at most twice its seconds)."""
    used = {name: after[name] - before[name] for name in after}
    return {
        "API server CPU (s)": used["kube-apiserver"],
        "etcd CPU (s)": used["etcd"],
        "scheduler + controllers CPU (s)": used["kube-scheduler"] + used["kube-controller-manager"],
        "KWOK CPU (s)": used["kwok"],
    }


def bare_body(sample: dict[str, Any]) -> str:
    """The sample pod as a create body, its name and application label to be filled in per pod."""
    meta = sample["metadata"]
    labels = {**(meta.get("labels") or {}), "spark-app-selector": "@APP@", "spark-exec-id": "@NAME@"}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "@NAME@", "labels": labels, "annotations": meta.get("annotations") or {}},
        "spec": {k: v for k, v in sample["spec"].items() if k != "nodeName"},
    }
    return json.dumps(body, separators=(",", ":"))


def bare(
    cluster: KwokCluster, clock: RealPodClock, http_: Http, body: str, pods: int, streams: int, run: str
) -> Figures:
    """``pods`` creates from ``streams`` threads, one keep-alive connection each; 429: wait and retry."""
    app, names = f"bare-{run}-{streams}", itertools.count()
    counts: Counter[str] = Counter()
    cpu: list[float] = []

    def stream() -> None:
        connection = http_.connect()
        started = time.thread_time()
        while (index := next(names)) < pods:
            payload = body.replace("@APP@", app).replace("@NAME@", f"bare-{index}").encode()
            while True:
                connection.request("POST", PODS_PATH, body=payload, headers=http_.headers)
                response = connection.getresponse()
                response.read()
                counts[str(response.status)] += 1
                if response.status != 429:
                    break
                time.sleep(float(response.getheader("Retry-After") or 1))
            if response.status != 201:
                raise RuntimeError(f"bare create answered {response.status}")
        connection.close()
        cpu.append(time.thread_time() - started)

    threads = [threading.Thread(target=stream, daemon=True) for _ in range(streams)]
    before = cluster.cpu_seconds()
    for thread in threads:
        thread.start()
    if not clock.wait_for(lambda: clock.running(app) >= pods, patience(pods)):
        raise RuntimeError(f"bare client: {clock.running(app)} of {pods} Running in {patience(pods):.0f} s")
    done = time.monotonic()
    cluster_cpu = cluster_share(before, cluster.cpu_seconds())
    for thread in threads:
        thread.join(60)
    created = clock.created(app)
    clear_pods(http_)
    print(f"  {BARE}, {streams} streams: answers {dict(counts)}, {done - created[0]:.1f} s", flush=True)
    return {
        "first create -> all Running (s)": done - created[0],
        "first -> last create (s)": created[-1] - created[0],
        "pods created": len(created),
        "API requests": sum(counts.values()),
        "create pods": sum(counts.values()),
        "429 answers": counts["429"],
        "driver CPU (s, JVM + Python)": sum(cpu),
        **cluster_cpu,
    }


def render(results: dict[str, dict[str, list[float]]], repeat: int, pods: int) -> str:
    order = [*SIDES, BARE]
    metrics = list(next(iter(results.values())))
    median = {side: {m: statistics.median(v) for m, v in results[side].items() if v} for side in results}
    running = RUNNING
    lines = [
        f"{pods} executor pods, real kube-apiserver + KWOK nodes; medians of {repeat} run(s)",
        "| | " + " | ".join(metrics) + " | ÷ Spark defaults | ÷ Spark batch 100 | ÷ bare client |",
        "|---|" + "---:|" * (len(metrics) + 3),
    ]
    for side in order:
        if side not in median:
            continue
        cells = [f"{median[side][m]:.1f}" if m in median[side] else "n/a" for m in metrics]
        ratios = [
            f"{median[side][running] / median[ref][running]:.2f}" if ref in median else "n/a"
            for ref in ("Spark 4.3, defaults", "Spark 4.3, batch.size=100", BARE)
        ]
        lines.append(f"| {side} | " + " | ".join(cells + ratios) + " |")
    return "\n".join(lines)


def one_repetition(
    cluster: KwokCluster, clock: RealPodClock, http_: Http, args: argparse.Namespace, run: int,
    results: dict[str, dict[str, list[float]]], token: str | None = None,
) -> None:  # fmt: skip
    sides = list(SIDES) if run % 2 == 0 else list(SIDES)[::-1]
    for side in sides:
        began = time.monotonic()
        figures = drive(cluster, clock, http_, side, args.pods, token)
        print(f"  {side}: {json.dumps(figures)}", flush=True)  # kept even if a later run fails
        for key, value in figures.items():
            results[side][key].append(value)
        print(f"run {run + 1}/{args.repeat} {side}: {time.monotonic() - began:.0f} s; "
              f"load {load()}", flush=True)  # fmt: skip
    if token is not None:
        return  # the bare client runs as the admin, whom APF exempts: no denominator under --apf
    drivers = [app for app in clock.samples if not app.startswith("bare-")]
    body = bare_body(clock.samples[drivers[-1]])  # the last driver's pod spec (ours when it ran last)
    best: Figures | None = None
    for streams in args.streams:
        figures = bare(cluster, clock, http_, body, args.pods, streams, str(run))
        print(f"  {BARE}, {streams} streams: {json.dumps(figures)}", flush=True)
        if best is None or figures[RUNNING] < best[RUNNING]:
            best = {**figures, "streams": streams}
    assert best is not None
    print(f"  {BARE}: {json.dumps(best)}", flush=True)
    print(f"run {run + 1}/{args.repeat} {BARE}: best with {best.pop('streams'):.0f} streams; load {load()}")
    for key, value in best.items():
        results[BARE][key].append(value)


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=1000, help="executor pods per run (default 1000; 10000)")
    parser.add_argument("--repeat", type=int, default=2, help="repetitions (default 2)")
    parser.add_argument("--streams", type=int, nargs="+", default=[4, 8, 16], help="bare client streams")
    parser.add_argument("--nodes", type=int, default=4, help="KWOK nodes (default 4)")
    parser.add_argument("--only", nargs="+", choices=list(SHORT), help="drivers to run (default: all)")
    parser.add_argument("--apf", action="store_true",
                        help="API Priority and Fairness: the drivers in a priority level of 2 seats "
                             "(default drivers: spark-batch100 ours-adaptive)")  # fmt: skip
    parser.add_argument("--unlimited-qps", action="store_true",
                        help="kube-scheduler and kube-controller-manager without their clients' rate limit "
                             "(50 requests a second by default: the scheduler then binds at most ~50 pods a "
                             "second), as kwokctl's --disable-qps-limits")  # fmt: skip
    parser.add_argument("--driver-memory",
                        help="spark.driver.memory of every driver (Spark's default: 1g; at 10,000 pods "
                             "Spark 4.3's driver spends most of its time in full GCs with 1g)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.driver_memory:
        DRIVER_MEMORY["spark.driver.memory"] = args.driver_memory
    only = args.only or (["spark-batch100", "ours-adaptive"] if args.apf else list(SHORT))
    for short, side in SHORT.items():
        if short not in only:
            del SIDES[side]
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    print(f"load at start: {load()}", flush=True)
    with KwokCluster(args.nodes, unlimited_qps=args.unlimited_qps) as cluster:
        http_ = Http(cluster)
        clock = RealPodClock(http_)
        token = restrict_drivers(cluster) if args.apf else None
        warm_up(cluster, clock, http_, token)
        for run in range(args.repeat):
            one_repetition(cluster, clock, http_, args, run, results, token)
    print(f"load at end: {load()}")
    scheduler = "unlimited" if args.unlimited_qps else "at their default rate limit (50/s)"
    print(f"scheduler and controller manager clients {scheduler}; driver memory {args.driver_memory or '1g'}")
    print(render({k: dict(v) for k, v in results.items()}, args.repeat, args.pods))


if __name__ == "__main__":
    main()
