"""What a real node changes on this machine is undone from its record alone (as after a SIGKILL of its
owner): processes in its cgroups, mounts under its directory, its cgroups, its bridge with a veth, and
the iptables chains that were not there before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from k8s_backend.local.node import host
from k8s_backend.local.node.runtime import undo_host_changes

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(os.geteuid() != 0, reason="host changes need root (bridge, cgroups, mounts)"),
]


def test_a_recorded_node_is_undone_completely(tmp_path: Path) -> None:
    suffix = os.urandom(3).hex()
    network = host.pick_network(suffix)
    changes = host.HostChanges(tmp_path / "changes.json", roots=[str(tmp_path)], bridge=network.bridge,
                               cgroup_root=f"k8s-backend-test-{suffix}")  # fmt: skip
    changes.iptables_before = host.iptables_chains()
    changes.save()
    changes.ip_forward_before = host.IP_FORWARD.read_text().strip()
    host.create_bridge(network)
    changes.forward_rule = host.keep_pod_traffic_here(network)
    changes.save()
    host.IP_FORWARD.write_text("1")  # as the bridge plugin does
    veth = f"k8sv-{suffix}"
    host.run(["ip", "link", "add", veth, "type", "veth", "peer", "name", f"k8sp-{suffix}"])
    host.run(["ip", "link", "set", veth, "master", network.bridge])
    host.create_cgroup_root(changes.cgroup_root)
    pod_cgroup = host.cgroup_hierarchies()[0] / changes.cgroup_root / "pod"
    pod_cgroup.mkdir()
    sleeper = subprocess.Popen(["sleep", "600"])
    (pod_cgroup / "cgroup.procs").write_text(str(sleeper.pid))
    (tmp_path / "mnt").mkdir()
    host.run(["mount", "-t", "tmpfs", "tmpfs", str(tmp_path / "mnt")])
    host.run(["iptables", "-t", "filter", "-N", f"CNI-TEST-{suffix}"])
    assert host.mounts_under([tmp_path]) and host.bridge_exists(network.bridge)

    loaded = host.HostChanges.load(tmp_path / "changes.json")
    assert loaded is not None
    assert undo_host_changes(loaded, others=()) == []  # as the last node of this machine

    assert sleeper.wait(timeout=10) == -9
    assert not host.mounts_under([tmp_path])
    assert not host.bridge_exists(network.bridge)
    assert subprocess.run(["ip", "link", "show", veth], capture_output=True).returncode != 0
    assert not any((h / changes.cgroup_root).exists() for h in host.cgroup_hierarchies())
    assert f"filter/CNI-TEST-{suffix}" not in host.iptables_chains()
    assert host.run(["iptables", "-C", *changes.forward_rule], check=False).returncode != 0
    assert host.IP_FORWARD.read_text().strip() == changes.ip_forward_before
