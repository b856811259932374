"""What a real node changes on this machine, and how each change is undone: a Linux bridge for the pod
network, cgroups under the kubelet's own cgroup root, and mounts under the node's work directory.

Every change is recorded in the node's work directory first (:class:`HostChanges`), so the cleanup can
run again after the owner died (SIGKILL) and finds exactly what to undo, and nothing of another node.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import logging
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import attrs

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
# 198.18.0.0/15 is reserved for network benchmarks (RFC 2544): nothing on a real network uses it, so pod
# traffic cannot be confused with anything outside this machine. Each node takes a free /24 of it.
POD_RANGE = ipaddress.IPv4Network("198.18.0.0/15")


class HostError(Exception):
    """A change to this machine (bridge, cgroup, mount) failed; the message names the command."""


@attrs.frozen
class PodNetwork:
    """The node's pod network: a bridge, its /24 and the gateway (the bridge's own address, which is how
    pods reach this machine, e.g. a client-mode driver)."""

    bridge: str
    subnet: str

    @property
    def gateway(self) -> str:
        return str(ipaddress.IPv4Network(self.subnet).network_address + 1)

    def cni_conflist(self, ipam_dir: Path, routes: Sequence[str] = ()) -> dict[str, object]:
        """The CNI configuration: bridge + host-local IPAM, no masquerade (pods talk to this machine
        only), then portmap for hostPort. ``routes``: address ranges besides the bridge's own that pods
        reach through the gateway (the Service range); there is no default route."""
        ipam: dict[str, object] = {
            "type": "host-local",
            "ranges": [[{"subnet": self.subnet, "gateway": self.gateway}]],
            "dataDir": str(ipam_dir),
        }
        if routes:
            ipam["routes"] = [{"dst": route, "gw": self.gateway} for route in routes]
        return {
            "cniVersion": "1.0.0",
            "name": "k8s-backend",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": ipam,
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }


def run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a host command; :class:`HostError` with its output when it fails and ``check``."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise HostError(f"`{' '.join(argv)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


def used_subnets() -> set[ipaddress.IPv4Network]:
    """The /24s of POD_RANGE that an interface of this machine already has an address in."""
    out = run(["ip", "-o", "-4", "addr", "show"], check=False).stdout
    used = set()
    for match in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/\d+", out):
        address = ipaddress.IPv4Address(match[1])
        if address in POD_RANGE:
            used.add(ipaddress.IPv4Network(f"{address}/24", strict=False))
    return used


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    """Serialise the nodes of this machine while one picks its /24 and makes its bridge, or reads the
    machine's state before it (two test runs can start nodes at the same moment)."""
    path = Path(tempfile.gettempdir()) / "k8s-backend-node.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pick_network(name_suffix: str) -> PodNetwork:
    """A bridge name (at most 15 characters) and the first free /24 of :data:`POD_RANGE`."""
    used = used_subnets()
    for subnet in POD_RANGE.subnets(new_prefix=24):
        if subnet not in used:
            return PodNetwork(bridge=f"k8sb-{name_suffix}"[:15], subnet=str(subnet))
    raise HostError(f"no free /24 left in {POD_RANGE} for a pod network")


def create_bridge(network: PodNetwork) -> None:
    """The bridge, up, with the gateway address (the CNI bridge plugin then attaches pods to it)."""
    prefix = ipaddress.IPv4Network(network.subnet).prefixlen
    run(["ip", "link", "add", network.bridge, "type", "bridge"])
    run(["ip", "addr", "add", f"{network.gateway}/{prefix}", "dev", network.bridge])
    run(["ip", "link", "set", network.bridge, "up"])


def delete_bridge(bridge: str) -> None:
    """The bridge and any veth still attached to it (absent is fine)."""
    out = run(["ip", "-o", "link", "show", "master", bridge], check=False).stdout
    for match in re.finditer(r"^\d+: ([^:@]+)", out, re.MULTILINE):
        run(["ip", "link", "del", match[1]], check=False)
    run(["ip", "link", "del", bridge], check=False)


def bridge_exists(bridge: str) -> bool:
    return run(["ip", "link", "show", bridge], check=False).returncode == 0


def cgroup_hierarchies() -> list[Path]:
    """The mounted cgroup v1 hierarchies (cpu, memory, ..., name=systemd), not the empty v2 mount."""
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    found = []
    for line in mounts:
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "cgroup" and Path(fields[1]).is_dir():
            found.append(Path(fields[1]))
    return sorted(set(found))


def create_cgroup_root(name: str) -> None:
    """``/<name>`` in every hierarchy: the kubelet's cgroupRoot (it checks that it exists)."""
    for hierarchy in cgroup_hierarchies():
        (hierarchy / name).mkdir(exist_ok=True)


def remove_cgroup_root(name: str) -> list[str]:
    """Remove ``/<name>`` and everything below, deepest first, in every hierarchy; the ones left."""
    left: list[str] = []
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / name
        if not top.is_dir():
            continue
        # Bottom-up, and a directory gone meanwhile (its process group's last task left) is not an error.
        for directory, _, _ in os.walk(top, topdown=False, onerror=lambda _error: None):
            _rmdir(Path(directory), left)
    return left


def _rmdir(directory: Path, left: list[str]) -> None:
    try:
        directory.rmdir()
    except FileNotFoundError:
        pass
    except OSError as error:
        left.append(f"{directory} ({error.strerror})")


def mounts_under(prefixes: Iterable[Path]) -> list[str]:
    """Mount points under any of ``prefixes``, deepest first (from /proc/self/mountinfo)."""
    roots = [str(p.resolve()) for p in prefixes]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if any(point == root or point.startswith(root + "/") for root in roots):
            found.append(point)
    return sorted(set(found), key=lambda p: -p.count("/"))


def unmount_under(prefixes: Iterable[Path]) -> list[str]:
    """Lazily unmount everything under ``prefixes`` (overlay rootfs, netns, shm, tmpfs volumes); the
    mount points still there afterwards."""
    prefixes = list(prefixes)
    for point in mounts_under(prefixes):
        run(["umount", "-l", point], check=False)
    return mounts_under(prefixes)


@attrs.define
class HostChanges:
    """The record of one node's changes, kept as JSON in its work directory."""

    path: Path
    owner: int = attrs.field(factory=os.getpid)
    bridge: str = ""
    cgroup_root: str = ""
    roots: list[str] = attrs.field(factory=list)  # directories whose mounts are the node's
    iptables_before: list[str] = attrs.field(factory=list)  # chains that existed before the node
    forward_rule: list[str] = attrs.field(factory=list)  # the FORWARD rule keeping pod traffic here
    ip_forward_before: str = ""  # net.ipv4.ip_forward before (the bridge plugin turns it on)
    started: float = 0.0  # wall-clock time of the record: the oldest live node's state wins

    def save(self) -> None:
        data = {
            "owner": self.owner, "bridge": self.bridge, "cgroup_root": self.cgroup_root,
            "roots": self.roots, "iptables_before": self.iptables_before,
            "forward_rule": self.forward_rule, "ip_forward_before": self.ip_forward_before,
            "started": self.started,
        }  # fmt: skip
        self.path.write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> HostChanges | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return cls(
            path, owner=int(data.get("owner", 0)), bridge=str(data.get("bridge", "")),
            cgroup_root=str(data.get("cgroup_root", "")), roots=list(data.get("roots", [])),
            iptables_before=list(data.get("iptables_before", [])),
            forward_rule=list(data.get("forward_rule", [])),
            ip_forward_before=str(data.get("ip_forward_before", "")),
            started=float(data.get("started", 0.0)),
        )  # fmt: skip


def machine_before(own: HostChanges, others: Sequence[HostChanges]) -> tuple[list[str], str]:
    """The machine's state before the first of the nodes now alive: the chains present before every one
    of them, and the oldest recorded ``ip_forward``. The last node to stop restores exactly that, even
    when others started and stopped while it ran."""
    chains = set(own.iptables_before)
    for other in others:
        chains &= set(other.iptables_before)
    recorded = [o for o in others if o.ip_forward_before]
    forward = min(recorded, key=lambda o: o.started).ip_forward_before if recorded else own.ip_forward_before
    return sorted(chains), forward


def iptables_chains() -> list[str]:
    """``table/chain`` for every chain of the filter, nat and mangle tables ([] without iptables)."""
    chains = []
    for table in ("filter", "nat", "mangle"):
        try:
            out = run(["iptables", "-t", table, "-S"], check=False).stdout
        except OSError:
            return []
        chains += [f"{table}/{line.split()[1]}" for line in out.splitlines() if line.startswith("-N ")]
    return chains


def remove_new_iptables_chains(before: Iterable[str]) -> list[str]:
    """Flush and delete the KUBE-/CNI- chains that did not exist in ``before`` (the kubelet's canary and
    hint chains, portmap's chains), after removing the jumps to them; the ones left."""
    known = set(before)
    new = [c for c in iptables_chains() if c not in known and c.split("/")[1].startswith(("KUBE-", "CNI-"))]
    for table_chain in new:
        table, chain = table_chain.split("/")
        rules = run(["iptables", "-t", table, "-S"], check=False).stdout.splitlines()
        for rule in rules:
            if rule.startswith("-A ") and f"-j {chain}" in rule:
                run(["iptables", "-t", table, *("-D " + rule[3:]).split()], check=False)
    for table_chain in new:
        table, chain = table_chain.split("/")
        run(["iptables", "-t", table, "-F", chain], check=False)
    for table_chain in new:
        table, chain = table_chain.split("/")
        run(["iptables", "-t", table, "-X", chain], check=False)
    return [c for c in iptables_chains() if c in new]


def kill_processes_under(roots: Iterable[str]) -> None:
    """SIGKILL processes whose executable or working directory lies under ``roots`` (shims, pauses)."""
    prefixes = tuple(str(Path(r).resolve()) + "/" for r in roots)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            if any(prefix in cmdline for prefix in prefixes):
                os.kill(int(proc.name), 9)


def kill_cgroup_processes(name: str) -> int:
    """SIGKILL every process in a cgroup below ``/<name>`` (the containers and pod sandboxes); how many."""
    killed = 0
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / name
        if not top.is_dir():
            continue
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), 9)
                        killed += 1
    return killed


IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


def keep_pod_traffic_here(network: PodNetwork) -> list[str]:
    """A FORWARD rule dropping what pods send anywhere but their own bridge: the bridge plugin turns on
    IP forwarding for its gateway, and without masquerade nothing from the pods may leave the machine.
    Returns the rule (for :func:`remove_rule`)."""
    rule = ["FORWARD", "-s", network.subnet, "!", "-o", network.bridge, "-j", "DROP",
            "-m", "comment", "--comment", f"k8s_backend node {network.bridge}"]  # fmt: skip
    run(["iptables", "-I", *rule])
    return rule


def remove_rule(rule: list[str]) -> bool:
    """Delete an iptables rule of the filter table; whether it is gone."""
    if not rule:
        return True
    run(["iptables", "-D", *rule], check=False)
    return run(["iptables", "-C", *rule], check=False).returncode != 0
