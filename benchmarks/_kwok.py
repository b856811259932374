"""The real control plane with KWOK-simulated nodes, for benchmarks at scale (no process kubelet).

KWOK (``sigs.k8s.io/kwok``, pinned at :data:`KWOK_VERSION`) is built once with ``go install`` into
``$K8S_BACKEND_CACHE_DIR/kwok/<version>/`` (default ``~/.cache/k8s_backend``), beside the control plane's
cache; its stage configurations (fast nodes, node heartbeat with a lease, fast pods) are read from the
same module in Go's module cache and concatenated into ``stages.yaml`` there. Nothing is vendored.

:class:`KwokCluster` starts the cached control plane (kube-scheduler binds the pods), registers
``nodes`` fake nodes with the annotation KWOK manages, starts KWOK and waits until every node is
schedulable. Pods then turn Running without any process. The API server also writes an audit log of
the requests of everyone but the control plane's own components, so that a benchmark can count a
driver's requests by kind and its 429 answers on the server side, for Spark's JVM backend as for ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _driver import cpu_seconds

from k8s_backend.kube.port import ApiError
from k8s_backend.local.control_plane.build import cache_root, find_go
from k8s_backend.local.control_plane.credentials import ADMIN
from k8s_backend.local.control_plane.processes import ManagedProcess
from k8s_backend.local.control_plane.runner import ControlPlane
from k8s_backend.local.control_plane.with_kubelet import schedulable
from k8s_backend.local.kubelet.remote import NODES

KWOK_VERSION = "v0.8.0"
KWOK_MODULE = "sigs.k8s.io/kwok"
# Without stage configurations KWOK exits with "no stages found"; these ship in its module.
STAGE_DIRS = (
    "kustomize/stage/node/fast", "kustomize/stage/node/heartbeat-with-lease", "kustomize/stage/pod/fast",
)  # fmt: skip
NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
BENCH_AGENT = "k8s-backend-bench"  # the User-Agent of the benchmark's own requests (left out of counts)
# Requests the audit log leaves out: the control plane's own components and the node simulator.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "None", "users": ["system:kube-scheduler", "system:kube-controller-manager"]},
        # kube-system's accounts are the controllers'; other namespaces' are drivers' (real_api.py --apf).
        {"level": "None", "userGroups": ["system:serviceaccounts:kube-system", "system:nodes"]},
        {"level": "None", "nonResourceURLs": ["/readyz*", "/healthz*", "/livez*", "/version"]},
        {"level": "Metadata"},
    ],
}


def kwok_dir() -> Path:
    """``$K8S_BACKEND_CACHE_DIR/kwok/<version>`` (default ``~/.cache/k8s_backend/kwok/<version>``)."""
    return cache_root().parent / "kwok" / KWOK_VERSION


def reports_version(binary: Path) -> bool:
    """The binary is there and says it is :data:`KWOK_VERSION` (``kwok version v0.8.0 go1.26.8 ...``)."""
    if not os.access(binary, os.X_OK):
        return False
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=False).stdout
    return f"version {KWOK_VERSION} " in out


def ensure_kwok() -> tuple[Path, Path]:
    """The cached KWOK binary and its stage configuration, built / assembled first when missing."""
    directory = kwok_dir()
    directory.mkdir(parents=True, exist_ok=True)
    binary, stages = directory / "kwok", directory / "stages.yaml"
    go = None
    env = {**os.environ, "GOBIN": str(directory), "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"}
    if not reports_version(binary):
        go = find_go()
        started = time.monotonic()
        print(f"building kwok {KWOK_VERSION} into {directory} (about a minute warm)", flush=True)
        subprocess.run(
            [go, "install", "-ldflags", "-s -w", f"{KWOK_MODULE}/cmd/kwok@{KWOK_VERSION}"],
            env=env, check=True, cwd=directory,
        )  # fmt: skip
        print(f"built kwok in {time.monotonic() - started:.0f} s", flush=True)
    if not stages.exists():
        go = go or find_go()
        out = subprocess.run(
            [go, "mod", "download", "-json", f"{KWOK_MODULE}@{KWOK_VERSION}"],
            env=env, check=True, cwd=directory, capture_output=True, text=True,
        ).stdout  # fmt: skip
        module = Path(json.loads(out)["Dir"])
        documents = [
            path.read_text().strip()
            for folder in STAGE_DIRS
            for path in sorted((module / folder).glob("*.yaml"))
            if path.name != "kustomization.yaml"
        ]
        stages.write_text("\n---\n".join(documents) + "\n")
    print(f"kwok {KWOK_VERSION}: {binary} (stages {stages})", flush=True)
    return binary, stages


# kwokctl's --disable-qps-limits: kube-scheduler's and kube-controller-manager's clients unthrottled. At its
# default (50 requests a second, bursts of 100; the controller manager's: 20 and 30) the scheduler binds at
# most ~50 pods a second, the floor of every driver's "all Running" on an otherwise idle server.
UNLIMITED_QPS = ["--kube-api-qps=5000", "--kube-api-burst=10000"]
ETCD_QUOTA = f"--quota-backend-bytes={8 << 30}"  # etcd's largest recommended


class AuditedControlPlane(ControlPlane):
    """A :class:`ControlPlane` whose API server writes an audit log (JSON lines) of :data:`AUDIT_POLICY`;
    ``unlimited_qps``: its scheduler and controller manager with :data:`UNLIMITED_QPS`."""

    def __init__(self, unlimited_qps: bool = False) -> None:
        super().__init__()
        self.unlimited_qps = unlimited_qps

    @property
    def audit_log(self) -> Path:
        return self.work_dir / "audit.log"

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        if name == "kube-apiserver":
            policy = self.work_dir / "audit-policy.json"
            policy.write_text(json.dumps(AUDIT_POLICY))
            argv = [
                *argv, f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json", "--audit-log-maxsize=0",
            ]  # fmt: skip
        elif name == "etcd":
            # 10,000-pod runs write tens of thousands of pod revisions: etcd's 1 GiB quota filled up
            # ("mvcc: database space exceeded", every write refused, deletes too) in the fifth run.
            quota = [i for i, arg in enumerate(argv) if arg.startswith("--quota-backend-bytes=")]
            assert quota, "etcd's argv has no --quota-backend-bytes= to raise"
            argv = [*argv[: quota[0]], ETCD_QUOTA, *argv[quota[0] + 1 :]]
        elif name in ("kube-scheduler", "kube-controller-manager") and self.unlimited_qps:
            argv = [*argv, *UNLIMITED_QPS]
        return super()._spawn(name, argv)


def fake_node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "100000", "memory": "100Ti", "pods": "20000", "ephemeral-storage": "100Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION[0]: NODE_ANNOTATION[1]},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok"},
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


class KwokCluster:
    """The control plane with ``nodes`` KWOK nodes; ``with KwokCluster(4) as cluster: cluster.url``."""

    def __init__(self, nodes: int = 4, ready_timeout: float = 180.0, unlimited_qps: bool = False) -> None:
        self.nodes = [f"kwok-node-{i}" for i in range(nodes)]
        self.control_plane = AuditedControlPlane(unlimited_qps)
        self._ready_timeout = ready_timeout
        self._kwok: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> KwokCluster:
        binary, stages = ensure_kwok()
        cp = self.control_plane.start()
        try:
            for name in self.nodes:
                status, body = cp.request("POST", "/api/v1/nodes", body=fake_node(name))
                if status not in (201, 409):
                    raise RuntimeError(f"creating node {name}: {status} {body}")
            log = (cp.work_dir / "kwok.log").open("wb")
            selector = "=".join(NODE_ANNOTATION)
            self._kwok = subprocess.Popen(
                [str(binary), f"--kubeconfig={cp.kubeconfig}", "-c", str(stages),
                 f"--manage-nodes-with-annotation-selector={selector}", "--node-lease-duration-seconds=40"],
                stdout=log, stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", ""),
                                                           "HOME": str(cp.work_dir)},
            )  # fmt: skip
            self._wait_schedulable()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._kwok is not None and self._kwok.poll() is None:
            self._kwok.terminate()
            try:
                self._kwok.wait(10)
            except subprocess.TimeoutExpired:
                self._kwok.kill()
                self._kwok.wait(10)
        self.control_plane.stop()

    def _wait_schedulable(self) -> None:
        admin = self.control_plane.api()
        deadline = time.monotonic() + self._ready_timeout
        waiting = list(self.nodes)
        while waiting:
            if self._kwok is not None and self._kwok.poll() is not None:
                tail = (self.control_plane.work_dir / "kwok.log").read_text()[-3000:]
                raise RuntimeError(f"kwok exited with {self._kwok.returncode}:\n{tail}")
            with contextlib.suppress(ApiError):  # a node being updated: asked again below
                waiting = [name for name in waiting if not schedulable(admin.get(NODES, None, name))]
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"KWOK nodes {waiting} not schedulable within {self._ready_timeout:.0f} s")
            time.sleep(0.2)

    # -- what drivers and the benchmark need ----------------------------------------------------------

    @property
    def url(self) -> str:
        return self.control_plane.url

    def spark_conf(self) -> dict[str, str]:
        """Client-mode properties for a driver on this machine (no ``spark.master``)."""
        conf = {
            "spark.submit.deployMode": "client",
            "spark.kubernetes.container.image": "spark:4.3.0",  # never pulled: KWOK runs nothing
            "spark.kubernetes.namespace": "default",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        }
        for family in ("spark.kubernetes.authenticate.", "spark.kubernetes.authenticate.submission."):
            conf[family + "oauthToken"] = self.control_plane.token
            conf[family + "caCertFile"] = self.control_plane.ca_file
        return conf

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds each cluster process has used so far: etcd, kube-apiserver, kube-controller-manager,
        kube-scheduler and ``kwok``."""
        pids = {process.name: process.pid for process in self.control_plane.processes}
        if self._kwok is not None:
            pids["kwok"] = self._kwok.pid
        return {name: cpu_seconds(pid) for name, pid in pids.items()}

    def audit_offset(self) -> int:
        """Where the audit log ends now (read from there by :meth:`requests_since`)."""
        try:
            return self.control_plane.audit_log.stat().st_size
        except FileNotFoundError:
            return 0

    def requests_since(self, offset: int, user: str = ADMIN) -> tuple[Counter[str], int]:
        """``user``'s requests audited after ``offset`` (but the benchmark's and KWOK's), by kind
        (``"create pods"``, ``"watch pods"``, ``"create pods -> 409"`` for failed ones, ...), and how many
        were answered 429. ``user``: the admin, or a driver's account (``system:serviceaccount:...``)."""
        kinds: Counter[str] = Counter()
        throttled = 0
        with self.control_plane.audit_log.open("rb") as handle:
            handle.seek(offset)
            for line in handle:
                event = json.loads(line)
                agent, who = event.get("userAgent", ""), (event.get("user") or {}).get("username")
                # The drivers authenticate as the admin; so do KWOK and the benchmark, told by their agent.
                if who != user or agent.startswith((BENCH_AGENT, "kwok")):
                    continue
                ref = event.get("objectRef") or {}
                what = ref.get("resource", event.get("requestURI", "?").split("?")[0])
                if ref.get("subresource"):
                    what += "/" + ref["subresource"]
                code = (event.get("responseStatus") or {}).get("code", 0)
                # A failed request is kept apart (101: a watch upgraded to a WebSocket, as fabric8's are).
                refused = f" -> {code}" if code >= 400 or code < 100 else ""
                kinds[f"{event.get('verb', '?')} {what}{refused}"] += 1
                throttled += code == 429
        return kinds, throttled
