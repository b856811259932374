"""RealNode: containerd, runc and a real kubelet registering one Node with a running control plane.

    with ControlPlane() as cp, RealNode(cp, images=[builder.spark()]) as node:
        ...  # pods bound to node.name run in containers; node.network.gateway reaches this machine

The two settings this machine needs (``reference/real-node.md``): ``failCgroupV1: false`` for the
kubelet on cgroup v1, and containerd's ``restrict_oom_score_adj = true`` since the sandbox lacks
CAP_SYS_RESOURCE. Everything lives under the node's work directory (containerd's root and state, the
kubelet's root dir, pod logs), its cgroups under a cgroup root of its own and its pods on a bridge of
its own, so :meth:`RealNode.stop` (or, after the owner died, :func:`cleanup_stale_nodes`) removes exactly
what it made: containers, shims, mounts, cgroups, the bridge and its veths, new iptables chains.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import attrs
import yaml

from k8s_backend.local.control_plane.certs import kubelet_serving_spec
from k8s_backend.local.control_plane.processes import ManagedProcess, Spawner, free_ports, wait_gone
from k8s_backend.local.control_plane.runner import SERVICE_CIDR
from k8s_backend.local.node import host, service_proxy
from k8s_backend.local.node.build import NodeBinaries, NodeBuilder, missing_host_tools
from k8s_backend.local.node.images import PAUSE_IMAGE
from k8s_backend.local.node.oci import OciImage

if TYPE_CHECKING:
    from k8s_backend.local.control_plane.runner import ControlPlane

log = logging.getLogger(__name__)
_T = TypeVar("_T")

NODE_NAME = "k8s-backend-kubelet"  # the control plane's kubelet user is system:node:<this>
WORK_DIR_PREFIX = "k8s-backend-node-"
CHANGES_FILE = "host-changes.json"
UNDO_LOCK = "undo.lock"  # held by whoever undoes a dead node's host changes: its reaper or a new node


class NodeError(Exception):
    """The node failed to start or to clean up; includes the relevant log's tail."""


def containerd_config(work: Path, binaries: NodeBinaries, cni_conf: Path) -> str:
    """containerd's configuration (version 3), everything under ``work``."""
    socket = work / "containerd" / "containerd.sock"
    return f"""version = 3
root = "{work / "containerd" / "root"}"
state = "{work / "containerd" / "state"}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins.'io.containerd.internal.v1.opt']
  path = "{work / "containerd" / "opt"}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{PAUSE_IMAGE}"

[plugins.'io.containerd.cri.v1.runtime']
  # The sandbox lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj to the kubelet's -998.
  restrict_oom_score_adj = true
  # Network namespaces under the state dir, not /var/run/netns: the cleanup finds them there.
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "{binaries.path("runc")}"
        Root = "{work / "containerd" / "runc"}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{binaries.cni_dir}"]
    conf_dir = "{cni_conf}"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def kubelet_config(
    *,
    work: Path,
    socket: Path,
    cgroup_root: str,
    address: str,
    port: int,
    healthz_port: int,
    ca_file: str,
    tls: KubeletTls,
) -> dict[str, object]:
    """The KubeletConfiguration: it serves ``tls``'s certificate and accepts clients (the API server)
    with a certificate of ``ca_file`` or a token, as the API server authorizes them; nobody anonymous."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # Since 1.35 the kubelet refuses cgroup v1 unless told otherwise; this machine has only v1.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{cgroup_root}",
        "containerRuntimeEndpoint": f"unix://{socket}",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "tlsCertFile": str(tls.cert),
        "tlsPrivateKeyFile": str(tls.key),
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": ca_file},
        },
        "authorization": {"mode": "Webhook"},
        "failSwapOn": False,
        # A shared machine: the node must not evict pods because of what others use of it.
        "evictionHard": {
            "memory.available": "1Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "resolvConf": "/etc/resolv.conf",
        "podLogsDir": str(work / "pod-logs"),
        "volumePluginDir": str(work / "volume-plugins"),
        "nodeStatusReportFrequency": "10s",
    }


@attrs.frozen
class KubeletTls:
    """The kubelet's serving certificate and key, signed by the control plane's CA."""

    cert: Path
    key: Path

    @classmethod
    def issue(cls, control_plane: ControlPlane, directory: Path, node_name: str, address: str) -> KubeletTls:
        """Have ``control_plane`` sign a certificate for the node's ``address`` (the API server dials it)."""
        tls = cls(directory / "kubelet.crt", directory / "kubelet.key")
        control_plane.sign(kubelet_serving_spec(node_name, [address]), tls.cert, tls.key)
        return tls


class RealNode:
    """containerd (with runc and the CNI plugins) and a kubelet serving one Node of ``control_plane``.

    :param images: imported into containerd's ``k8s.io`` namespace before the kubelet starts (the sandbox
        image is always imported).
    :param ready_timeout: seconds for the Node to become Ready and schedulable.
    """

    def __init__(
        self,
        control_plane: ControlPlane,
        *,
        images: Sequence[OciImage] = (),
        binaries: NodeBinaries | None = None,
        pause: OciImage | None = None,
        ready_timeout: float = 180.0,
        stop_grace: float = 10.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._cp = control_plane
        self._images = tuple(images)
        self._binaries = binaries
        self._pause = pause
        self._ready_timeout = ready_timeout
        self._stop_grace = stop_grace
        self._progress = progress or (lambda line: log.info("%s", line))
        self._dir: Path | None = None
        self._changes: host.HostChanges | None = None
        self._spawner: Spawner | None = None
        self._containerd: ManagedProcess | None = None
        self._kubelet: ManagedProcess | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self.network: host.PodNetwork | None = None
        self.name = NODE_NAME
        self.timings: dict[str, float] = {}
        """Seconds from the start of ``start()``: ``containerd``, ``images`` (imported), ``node_ready``."""

    def __enter__(self) -> RealNode:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def work_dir(self) -> Path:
        if self._dir is None:
            raise RuntimeError("the node is not running")
        return self._dir

    @property
    def gateway(self) -> str:
        """The bridge's address: pods reach this machine (a client-mode driver) there."""
        if self.network is None:
            raise RuntimeError("the node is not running")
        return self.network.gateway

    @property
    def containerd_socket(self) -> Path:
        return self.work_dir / "containerd" / "containerd.sock"

    def container_log(self, pod: Mapping[str, Any], container: str) -> str:
        """What ``container`` of ``pod`` wrote (stdout and stderr, in order), from the kubelet's log file
        (the CRI format: ``<time> <stream> <P|F> <text>``, P marking a line continued in the next entry)."""
        meta = pod.get("metadata") or {}
        directory = (
            self.work_dir / "pod-logs" / f"{meta.get('namespace')}_{meta.get('name')}_{meta.get('uid')}"
        )
        text = []
        for path in sorted((directory / container).glob("*.log")):
            for line in path.read_text(errors="replace").splitlines():
                parts = line.split(" ", 3)
                if len(parts) == 4:
                    text.append(parts[3] + ("" if parts[2] == "P" else "\n"))
        return "".join(text)

    def start(self) -> RealNode:
        """Start containerd, import the images, start the kubelet; wait until the Node is schedulable."""
        if self._dir is not None:
            raise RuntimeError("this RealNode is already started")
        binaries = self._binaries or NodeBuilder(progress=self._progress).ensure()
        tools = missing_host_tools()
        if tools:
            raise NodeError(
                "the node needs "
                + "; ".join(f"Debian's {p} for {why}" for p, why in tools.items())
                + ": run `python -m k8s_backend.local.node build` (it installs them) or apt-get install them"
            )
        cleanup_stale_nodes()
        started = time.monotonic()
        self._dir = Path(tempfile.mkdtemp(prefix=WORK_DIR_PREFIX))
        suffix = secrets.token_hex(3)
        self._changes = host.HostChanges(self._dir / CHANGES_FILE, roots=[str(self._dir)])
        with host.machine_lock():
            changes = self._changes
            changes.iptables_before = host.iptables_chains()
            changes.ip_forward_before = host.IP_FORWARD.read_text().strip()
            changes.started = time.time()
            others = live_node_records(exclude=self._dir)
            changes.iptables_before, changes.ip_forward_before = host.machine_before(changes, others)
            changes.save()
        self._spawner = Spawner()
        try:
            self._start_reaper()
            self._start_containerd(binaries, suffix)
            self._serve_kubernetes_service()
            self.timings["containerd"] = time.monotonic() - started
            from k8s_backend.local.node.images import ImageBuilder

            pause = self._pause or ImageBuilder(progress=self._progress).pause()
            for image in (pause, *self._images):
                self.import_image(binaries, image)
            self.timings["images"] = time.monotonic() - started
            self._start_kubelet(binaries, suffix)
            self._wait_ready()
            self.timings["node_ready"] = time.monotonic() - started
        except BaseException:
            self.stop()
            raise
        return self

    def _start_reaper(self) -> None:
        # Not behind the parent-death launcher and in a session of its own: it must outlive its owner.
        argv = [sys.executable, "-m", "k8s_backend.local.node.reaper", str(os.getpid()), str(self.work_dir)]
        with (self.work_dir / "reaper.log").open("ab") as out:
            self._reaper = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def _start_containerd(self, binaries: NodeBinaries, suffix: str) -> None:
        changes = self._running(self._changes)
        with host.machine_lock():  # another node must not pick the same /24 before this bridge exists
            self.network = host.pick_network(suffix)
            changes.bridge = self.network.bridge
            changes.save()
            host.create_bridge(self.network)
        changes.forward_rule = host.keep_pod_traffic_here(self.network)
        changes.save()
        cni_conf = self.work_dir / "cni" / "net.d"
        cni_conf.mkdir(parents=True)
        # The Service range through the gateway: the kubernetes Service (service_proxy) for in-cluster
        # configuration; the FORWARD rule above drops the rest.
        conflist = self.network.cni_conflist(self.work_dir / "cni" / "ipam", routes=[SERVICE_CIDR])
        (cni_conf / "10-k8s-backend.conflist").write_text(json.dumps(conflist, indent=1))
        config = self.work_dir / "containerd" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(containerd_config(self.work_dir, binaries, cni_conf))
        argv = [str(binaries.path("containerd")), "--config", str(config)]
        self._containerd = self._spawn("containerd", argv, binaries)
        self._wait("containerd's socket", self.containerd_socket.exists, 60, self._containerd)

    def _serve_kubernetes_service(self) -> None:
        """The ``kubernetes`` Service's ClusterIP reaches the API server from this node's pods (in-cluster
        configuration), see :mod:`k8s_backend.local.node.service_proxy`."""
        network = self._running(self.network)
        path = "/api/v1/namespaces/default/services/kubernetes"
        found: dict[str, Any] = {}

        def created() -> bool:  # by the API server itself, moments after it is ready
            status, body = self._cp.request("GET", path)
            if status == 200 and isinstance(body, dict):
                found.update(body)
            return bool(found)

        self._wait("the kubernetes Service", created, 60, None)
        spec = found["spec"]
        api_port = urlsplit(self._cp.url).port
        if api_port is None:
            raise NodeError(f"the control plane's URL {self._cp.url} names no port")
        service_proxy.expose_api_server(
            network.bridge, spec["clusterIP"], int(spec["ports"][0]["port"]), api_port
        )

    def import_image(self, binaries: NodeBinaries, image: OciImage) -> None:
        """``ctr images import`` of ``image`` (an OCI layout streamed to its stdin), unpacked."""
        started = time.monotonic()
        # ctr unpacks for the default snapshotter (overlayfs), which the CRI needs.
        argv = [str(binaries.path("ctr")), "--address", str(self.containerd_socket), "-n", "k8s.io",
                "images", "import", "-"]  # fmt: skip
        with subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        ) as proc:
            assert proc.stdin is not None
            try:
                image.write_layout_archive(proc.stdin)
            finally:
                proc.stdin.close()
            out = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
            code = proc.wait()
        if code != 0:
            raise NodeError(
                f"importing {image.name} into containerd failed (exit {code}): {out.strip()[-2000:]}"
            )
        self._progress(f"imported {image.name} in {time.monotonic() - started:.0f} s")

    def _start_kubelet(self, binaries: NodeBinaries, suffix: str) -> None:
        changes = self._running(self._changes)
        network = self._running(self.network)
        changes.cgroup_root = f"k8s-backend-{suffix}"
        changes.save()
        host.create_cgroup_root(changes.cgroup_root)
        root = self.work_dir / "kubelet"
        root.mkdir()
        tls = KubeletTls.issue(self._cp, root / "pki", self.name, network.gateway)
        port, healthz_port = free_ports(2)
        config = kubelet_config(
            work=self.work_dir, socket=self.containerd_socket, cgroup_root=changes.cgroup_root,
            address=network.gateway, port=port, healthz_port=healthz_port, ca_file=self._cp.ca_file,
            tls=tls,
        )  # fmt: skip
        config_path = self.work_dir / "kubelet.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self._kubelet = self._spawn("kubelet", [
            str(binaries.path("kubelet")), f"--config={config_path}",
            f"--kubeconfig={self._cp.kubelet_kubeconfig}", f"--hostname-override={self.name}",
            f"--node-ip={network.gateway}", f"--root-dir={root}", f"--cert-dir={root / 'pki'}", "--v=2",
        ], binaries)  # fmt: skip

    def _spawn(self, name: str, argv: list[str], binaries: NodeBinaries) -> ManagedProcess:
        spawner = self._running(self._spawner)
        log_path = self.work_dir / f"{name}.log"
        # containerd finds containerd-shim-runc-v2 (and the shim runc) on PATH.
        path = f"{binaries.bin_dir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"
        env = {"PATH": path, "HOME": str(self.work_dir)}
        process = ManagedProcess(name, spawner.popen(argv, log_path=log_path, env=env), log_path)
        self._progress(f"started {name} (pid {process.pid}), log {log_path}")
        return process

    def _wait_ready(self) -> None:
        from k8s_backend.local.control_plane.with_kubelet import schedulable

        def ready() -> bool:
            status, body = self._cp.request("GET", f"/api/v1/nodes/{self.name}")
            return status == 200 and isinstance(body, dict) and schedulable(body)

        self._wait(f"Node {self.name} Ready and schedulable", ready, self._ready_timeout, self._kubelet)

    def _wait(
        self, what: str, ready: Callable[[], bool], timeout: float, process: ManagedProcess | None
    ) -> None:
        deadline = time.monotonic() + timeout
        watched = [p for p in (self._containerd, self._kubelet) if p is not None]
        while not ready():
            for proc in watched:
                if not proc.alive():
                    raise NodeError(f"{proc.name} exited with {proc.exit_code} while waiting for {what}; "
                                    f"the end of {proc.log_path}:\n{proc.tail()}")  # fmt: skip
            if time.monotonic() > deadline:
                tail = process.tail() if process is not None else ""
                raise NodeError(f"{what} not within {timeout:.0f} s; the end of its log:\n{tail}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the kubelet, kill every container, stop containerd, undo every host change. Idempotent."""
        if self._dir is None:
            return
        reaper, self._reaper = self._reaper, None
        if reaper is not None:  # this stop does its work; the reaper is for an owner that died
            reaper.terminate()
            reaper.wait()
        kubelet, self._kubelet = self._kubelet, None
        if kubelet is not None:
            kubelet.stop(self._stop_grace)
        containerd, self._containerd = self._containerd, None
        if containerd is not None:
            if self._changes is not None and self._changes.cgroup_root:
                host.kill_cgroup_processes(self._changes.cgroup_root)
            containerd.stop(self._stop_grace)
        if self._spawner is not None:
            self._spawner.close()
            self._spawner = None
        left = undo_host_changes(self._changes) if self._changes is not None else []
        if not wait_gone([p for p in (kubelet, containerd) if p is not None]):
            left.append("kubelet or containerd still running")
        if left:
            log.warning("the node at %s left: %s", self._dir, "; ".join(left))
        else:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def _running(self, value: _T | None) -> _T:
        if value is None:
            raise RuntimeError("the node is not running")
        return value


def undo_host_changes(
    changes: host.HostChanges, others: Sequence[host.HostChanges] | None = None
) -> list[str]:
    """Undo what ``changes`` records (processes, mounts, cgroups, bridge, iptables chains); what is left.

    The iptables chains (the kubelets' and the CNI plugins', shared by name) and ``ip_forward`` are the
    machine's: while ``others`` (default: the nodes alive on this machine) run, they are left to the last
    of them, whose record holds the state before the first.
    """
    if others is None:
        others = live_node_records(exclude=Path(changes.path).parent)
    left: list[str] = []
    roots = [Path(r) for r in changes.roots]
    # Containers first (they hold mounts and cgroups), then the shims (they hold the task state).
    if changes.cgroup_root:
        host.kill_cgroup_processes(changes.cgroup_root)
    host.kill_processes_under(changes.roots)
    time.sleep(0.2)  # the kernel reaps the killed processes; mounts held by them go with them
    left += [f"mount {p}" for p in host.unmount_under(roots)]
    if changes.cgroup_root:
        for _ in range(20):  # a killed process leaves its cgroup a moment after SIGKILL
            if not host.remove_cgroup_root(changes.cgroup_root):
                break
            host.kill_cgroup_processes(changes.cgroup_root)
            time.sleep(0.1)
        left += [f"cgroup {c}" for c in host.remove_cgroup_root(changes.cgroup_root)]
    if changes.bridge:
        left += service_proxy.remove(changes.bridge)
        host.delete_bridge(changes.bridge)
        if host.bridge_exists(changes.bridge):
            left.append(f"bridge {changes.bridge}")
    if not host.remove_rule(changes.forward_rule):
        left.append(f"iptables rule {' '.join(changes.forward_rule)}")
    if others:
        return left
    left += [f"iptables chain {c}" for c in host.remove_new_iptables_chains(changes.iptables_before)]
    if changes.ip_forward_before:
        with contextlib.suppress(OSError):
            host.IP_FORWARD.write_text(changes.ip_forward_before)
    return left


def live_node_records(exclude: Path | None = None) -> list[host.HostChanges]:
    """The records of this machine's nodes whose owner is alive (but ``exclude``'s)."""
    records = []
    for path in Path(tempfile.gettempdir()).glob(f"{WORK_DIR_PREFIX}*"):
        changes = host.HostChanges.load(path / CHANGES_FILE)
        if changes is None or (exclude is not None and path.resolve() == exclude.resolve()):
            continue
        if _alive(changes.owner):
            records.append(changes)
    return records


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def undoing(node_dir: Path, *, wait: bool) -> Iterator[bool]:
    """Hold ``node_dir``'s undo lock: one undoer at a time per dead node (its reaper, or a new node's
    :func:`cleanup_stale_nodes`; two at once each found the other's removals missing). Yields False when
    the directory is gone, or the lock is held and ``wait`` is False."""
    try:
        fd = os.open(node_dir / UNDO_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:
        yield False  # removed by whoever undid it
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def cleanup_stale_nodes() -> None:
    """Undo the host changes of nodes whose owner died without stopping them (SIGKILL): their processes
    died with it (parent-death signal) but the containers, mounts, cgroups and bridge stayed. A node whose
    reaper is at it already is left to its reaper."""
    for path in Path(tempfile.gettempdir()).glob(f"{WORK_DIR_PREFIX}*"):
        changes = host.HostChanges.load(path / CHANGES_FILE)
        if changes is None or _alive(changes.owner):
            continue  # stopped, or someone else's live node
        with undoing(path, wait=False) as mine:
            if not mine or host.HostChanges.load(path / CHANGES_FILE) is None:
                continue
            log.info("cleaning up the node at %s, left by process %s", path, changes.owner)
            left = undo_host_changes(changes)
            if left:
                log.warning("the stale node at %s left: %s", path, "; ".join(left))
            else:
                with contextlib.suppress(OSError):
                    shutil.rmtree(path)
