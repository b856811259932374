"""A stand-in Python backend for bridge tests: executors are plain local JVM processes, no Kubernetes.

It implements the hooks the bridge drives and records every call, so tests can check what Spark asked
for. Executors run Spark's Kubernetes executor main class, as the official image's entrypoint does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyspark

from k8s_backend.conf.model import ResourceProfile
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.local.kubelet.container import EXECUTOR_MAIN, JDK_MODULE_OPTIONS

SPARK_HOME = Path(pyspark.__file__).resolve().parent


class StandInBackend:
    """Launches one executor process per missing executor of each target; kills them on request."""

    def __init__(
        self,
        conf: Mapping[str, str],
        *,
        app_id: str,
        driver_url: str,
        api: Any = None,
        driver: Any = None,
        log_dir: Path | None = None,
    ) -> None:
        self.conf = dict(conf)
        self.app_id = app_id
        self.driver_url = driver_url
        self.driver = driver
        self.log_dir = log_dir
        self.calls: list[tuple[str, Any]] = []
        self.profiles: dict[int, ResourceProfile] = {}
        self.processes: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}  # id -> (profile, process)
        self.killed: set[str] = set()
        self.commands: dict[str, list[str]] = {}
        self._next_id = 0
        self._cond = threading.Condition()
        self._initial = int(self.conf.get("spark.executor.instances", "2"))
        if self.conf.get("spark.dynamicAllocation.enabled") == "true":
            self._initial = max(
                int(self.conf.get("spark.dynamicAllocation.minExecutors", "0")),
                int(self.conf.get("spark.dynamicAllocation.initialExecutors", "0")),
                int(self.conf.get("spark.executor.instances", "0")),
            )

    # -- hooks -----------------------------------------------------------------------------------------

    def application_id(self) -> str:
        return self.app_id

    def start(self) -> None:
        self._record("start", None)
        self._reconcile({0: self._initial})

    def stop(self) -> None:
        self._record("stop", None)
        for _, process in list(self.processes.values()):
            process.terminate()
        for _, process in list(self.processes.values()):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        self._record("register_resource_profile", profile)
        self.profiles[profile.id] = profile

    def request_total_executors(self, targets: Mapping[int, int]) -> bool:
        self._record("request_total_executors", dict(targets))
        self._reconcile(targets)
        return True

    def kill_executors(self, executor_ids: Sequence[str]) -> bool:
        self._record("kill_executors", list(executor_ids))
        for executor_id in executor_ids:
            self.killed.add(executor_id)
            if self.driver is not None:
                loss = ExecutorLoss(-1, False, "killed", killed_by_driver=True)
                self.driver.remove_executor(executor_id, loss)
        return True

    def decommission_executors(self, executor_ids: Sequence[str]) -> bool:
        self._record("decommission_executors", list(executor_ids))
        return True

    def is_executor_excluded(self, executor_id: str) -> bool:
        return executor_id in self.killed

    def sufficient_resources_registered(self) -> bool:
        registered = self.driver.registered_executors() if self.driver is not None else {}
        return bool(len(registered) >= self._initial * 0.8)

    # -- test helpers ----------------------------------------------------------------------------------

    def wait_for(self, predicate: Any, timeout: float = 60.0) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(predicate, timeout))

    def hooks_called(self) -> list[str]:
        with self._cond:
            return [name for name, _ in self.calls]

    def kill_process(self, executor_id: str) -> int:
        """SIGKILL an executor process as the OOM killer would; returns its exit code."""
        _, process = self.processes[executor_id]
        process.kill()
        return process.wait(timeout=10)

    # -- internals -------------------------------------------------------------------------------------

    def _record(self, hook: str, argument: Any) -> None:
        with self._cond:
            self.calls.append((hook, argument))
            self._cond.notify_all()

    def _reconcile(self, targets: Mapping[int, int]) -> None:
        for profile_id, total in targets.items():
            alive = [
                i
                for i, (p, proc) in self.processes.items()
                if p == profile_id and proc.poll() is None and i not in self.killed
            ]
            for _ in range(total - len(alive)):
                self._launch(profile_id)

    def _launch(self, profile_id: int) -> None:
        self._next_id += 1
        executor_id = str(self._next_id)
        profile = self.profiles.get(profile_id)
        cores = profile.cores if profile else int(self.conf.get("spark.executor.cores", "1"))
        memory = profile.memory_mib if profile else 512
        command = [
            "java", f"-Xmx{memory}m", *JDK_MODULE_OPTIONS,
            "-cp", str(SPARK_HOME / "jars" / "*"), EXECUTOR_MAIN,
            "--driver-url", self.driver_url, "--executor-id", executor_id, "--hostname", "127.0.0.1",
            "--cores", str(cores), "--app-id", self.app_id, "--resourceProfileId", str(profile_id),
            "--podName", f"standin-exec-{executor_id}",
        ]  # fmt: skip
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), PYSPARK_PYTHON=sys.executable)
        if self.log_dir is not None:
            out: Any = open(self.log_dir / f"exec-{executor_id}.log", "wb")  # noqa: SIM115 -- lives with the process
        else:
            out = subprocess.DEVNULL
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        with self._cond:
            self.processes[executor_id] = (profile_id, process)
            self.commands[executor_id] = command
            self._cond.notify_all()
