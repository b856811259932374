"""The machine's state a node restores when it stops last: the chains and ip_forward from before the
first of the nodes alive, whatever order they started and stop in."""

from __future__ import annotations

from pathlib import Path

from k8s_backend.local.node import host


def record(path: Path, chains: list[str], forward: str, started: float) -> host.HostChanges:
    return host.HostChanges(path, owner=1, iptables_before=chains, ip_forward_before=forward, started=started)


def test_alone_a_node_keeps_what_it_saw(tmp_path: Path) -> None:
    own = record(tmp_path / "a", ["filter/INPUT-X"], "0", 10.0)
    assert host.machine_before(own, []) == (["filter/INPUT-X"], "0")


def test_a_later_node_inherits_the_state_before_the_first(tmp_path: Path) -> None:
    first = record(tmp_path / "a", ["filter/X"], "0", 10.0)
    # The first node's kubelet made KUBE-A and its bridge plugin turned ip_forward on.
    own = record(tmp_path / "b", ["filter/X", "filter/KUBE-A"], "1", 20.0)
    assert host.machine_before(own, [first]) == (["filter/X"], "0")


def test_the_oldest_live_record_gives_ip_forward(tmp_path: Path) -> None:
    second = record(tmp_path / "b", ["filter/X"], "1", 20.0)
    first = record(tmp_path / "a", ["filter/X"], "0", 10.0)
    own = record(tmp_path / "c", ["filter/X", "nat/KUBE-B"], "1", 30.0)
    assert host.machine_before(own, [second, first]) == (["filter/X"], "0")


def test_a_record_survives_its_file(tmp_path: Path) -> None:
    changes = record(tmp_path / "changes.json", ["filter/X"], "0", 12.5)
    changes.save()
    loaded = host.HostChanges.load(tmp_path / "changes.json")
    assert loaded is not None and (loaded.started, loaded.iptables_before) == (12.5, ["filter/X"])
