"""Cluster-side instruments for ``compare_spark.py``: a pod-event clock and a driver in a child process.

Times are taken on the machine-wide monotonic clock (``time.monotonic``), which the driver processes
share, so the parent can compare its pod events with the moment a driver asked for its session.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from k8s_backend.kube.port import PODS
from k8s_backend.local import LocalCluster

DRIVER = Path(__file__).with_name("_driver.py")
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # JVM start-up speed on small machines


@attrs.define
class PodTimes:
    """When the recorder saw an executor pod created, Running and gone (monotonic seconds)."""

    app: str
    created: float
    running: float | None = None
    gone: float | None = None  # deleted, being deleted, or ended (Failed/Succeeded)


class PodClock:
    """Watches the fake's pods on a thread (in process: its watch is no API request) and keeps, per
    executor pod, the moments it was created, turned Running and deleted."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._fake = cluster.fake
        self._cond = threading.Condition()
        self.pods: dict[tuple[str, str], PodTimes] = {}  # by (application id, pod name)
        self._stream: Any = None
        self._seen_rv = 0
        self.restart()

    def restart(self) -> None:
        """Watch again from now (after a fault dropped every watch, this one's too)."""
        if self._stream is not None:
            self._stream.close()
        self._stream = stream = self._fake.watch(
            PODS, "default", resource_version=self._fake.resource_version
        )
        threading.Thread(target=self._run, args=(stream,), name="pod-clock", daemon=True).start()

    def _run(self, stream: Any) -> None:
        try:
            for event in stream:
                meta, now = event.object["metadata"], time.monotonic()
                with self._cond:
                    self._seen_rv = max(self._seen_rv, int(meta.get("resourceVersion") or 0))
                    self._cond.notify_all()
                if event.type == "BOOKMARK":
                    continue
                labels = meta.get("labels") or {}
                if labels.get("spark-role") != "executor":
                    continue
                with self._cond:  # (events of an earlier run's pods may still be arriving: keyed by app)
                    key = (labels.get("spark-app-selector", ""), meta["name"])
                    times = self.pods.setdefault(key, PodTimes(app=key[0], created=now))
                    phase = (event.object.get("status") or {}).get("phase")
                    if phase == "Running" and times.running is None:
                        times.running = now
                    ended = phase in ("Failed", "Succeeded") or meta.get("deletionTimestamp")
                    if (event.type == "DELETED" or ended) and times.gone is None:
                        times.gone = now
                    self._cond.notify_all()
        except Exception:  # a dropped or refused watch ends this thread; restart() opens the next
            return

    def reset(self, timeout: float = 120.0) -> None:
        """Forget every pod, once the events already sent (an earlier run's) were taken in: its times
        are those of events as they happen, not of a backlog."""
        upto = int(self._fake.resource_version)
        self._fake.send_bookmark()
        with self._cond:
            self._cond.wait_for(lambda: self._seen_rv >= upto, timeout)
            self.pods.clear()

    def running_live(self, app: str) -> int:
        """The application's executor pods that are Running and not on their way out."""
        with self._cond:
            return sum(1 for t in self.pods.values() if t.app == app and t.running and t.gone is None)

    def created_after(self, app: str, moment: float = 0.0) -> list[float]:
        """When the application's executor pods created at or after ``moment`` were seen, oldest first."""
        with self._cond:
            return sorted(t.created for t in self.pods.values() if t.app == app and t.created >= moment)

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


class Driver:
    """A Spark driver in a child process (see ``_driver.py``), read event by event."""

    def __init__(self, master: str, conf: dict[str, str], wait_registered: int = 0) -> None:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        env.pop("KUBECONFIG", None)
        spec = json.dumps({"master": master, "conf": conf, "wait": wait_registered})
        self._process = subprocess.Popen(
            [sys.executable, str(DRIVER), spec], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        )  # fmt: skip
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._stderr: list[str] = []
        self.usage: dict[str, float] = {}
        """The driver's ``cpu`` event once :meth:`finish` returned: CPU seconds and peak RSS (MiB)."""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self._process.stderr or []), daemon=True).start()

    def _read(self) -> None:
        for line in self._process.stdout or []:
            if line.startswith("{"):
                self._events.put(json.loads(line))
        self._events.put({"event": "exited"})

    def expect(self, event: str, timeout: float = 300.0) -> dict[str, Any]:
        """The next event, which must be ``event``; a RuntimeError with the driver's log otherwise."""
        try:
            got = self._events.get(timeout=timeout)
        except queue.Empty:
            got = {"event": "timeout"}
        if got["event"] != event:
            self.kill()
            tail = "".join(self._stderr[-40:])
            raise RuntimeError(f"driver: expected {event!r}, got {got['event']!r}\n{tail}")
        return got

    def finish(self) -> float:
        """Ask the driver to stop; its CPU seconds (Python + JVM) just before it stopped."""
        assert self._process.stdin is not None
        self._process.stdin.write("stop\n")
        self._process.stdin.flush()
        cpu = self.expect("cpu")
        self.usage = {k: float(v) for k, v in cpu.items() if k != "event"}
        self.expect("stopped", timeout=120)
        self._process.wait(60)
        return float(cpu["python"]) + float(cpu["jvm"])

    def kill(self) -> None:
        """Kill the driver and its JVM (its own process group: a killed Python would leave its JVM)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
            os.killpg(self._process.pid, signal.SIGKILL)
        if self._process.poll() is None:
            self._process.wait(30)


def spark_conf(cluster: LocalCluster, ours: bool, **extra: str) -> tuple[str, dict[str, str]]:
    """The master and properties for one driver on ``cluster``: ours (``pyk8s://``) or Spark's (``k8s://``)."""
    conf = cluster.spark_conf()
    conf.pop("spark.master")
    conf.update({**spark_conf_base(), **extra})
    return (cluster.master if ours else cluster.spark_k8s_master), conf


def spark_conf_base() -> dict[str, str]:
    """What every benchmark driver sets, whatever the cluster: no UI, small executors, a fast JVM."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": "512m",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
    }


def clear_pods(cluster: LocalCluster, timeout: float = 60.0) -> None:
    """Remove every pod a driver left (a stopped driver deletes its own; this is the safety net), and
    forget the fake's record of calls: it keeps every request body, and a heap growing from run to run
    would slow the server of later runs."""
    fake = cluster.fake
    if fake.objects(PODS, "default"):
        fake.delete_collection(PODS, "default", grace_period_seconds=0)
    cluster.wait_until(lambda: not fake.objects(PODS, "default"), timeout)
    fake.reset_calls()


def requests_served(cluster: LocalCluster) -> int:
    return len(cluster.server.request_log)


def request_kinds(cluster: LocalCluster, since: int) -> str:
    """The requests answered after the first ``since``, by kind: ``"create pods x2, watch pods x1, ..."``."""
    kinds: Counter[str] = Counter()
    for record in cluster.server.request_log[since:]:
        path, _, query = record.path.partition("?")
        parts = path.strip("/").split("/")
        if parts[0] not in ("api", "apis") or len(parts) < 3:
            kinds[f"{record.method} {path}"] += 1
            continue
        named = len(parts) % 2 == 0 if parts[0] == "api" else len(parts) % 2 == 1  # .../<plural>/<name>
        plural = parts[-2] if named else parts[-1]
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(record.method, "")
        if record.method == "GET":
            verb = "get" if named else "watch" if "watch=" in query else "list"
        elif record.method == "DELETE":
            verb = "delete" if named else "delete collection"
        kinds[f"{verb or record.method} {plural}"] += 1
    return ", ".join(f"{kind} x{count}" for kind, count in sorted(kinds.items()))
