"""One undoer at a time per dead real node: its reaper or a new node's stale-node cleanup (two test runs at
once had both at the same node, and one crashed on a cgroup directory the other had just removed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from k8s_backend.local.node import host, runtime
from k8s_backend.local.node.runtime import CHANGES_FILE, WORK_DIR_PREFIX, cleanup_stale_nodes, undoing


def dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def dead_node(tmp_path: Path) -> Path:
    node = tmp_path / f"{WORK_DIR_PREFIX}dead"
    node.mkdir()
    host.HostChanges(path=node / CHANGES_FILE, owner=dead_pid()).save()
    return node


def test_a_held_undo_lock_is_refused_without_waiting_and_free_once_released(tmp_path: Path) -> None:
    with undoing(tmp_path, wait=True) as first:
        assert first
        with undoing(tmp_path, wait=False) as second:
            assert not second
    with undoing(tmp_path, wait=False) as third:
        assert third
    with undoing(tmp_path / "gone", wait=True) as missing:
        assert not missing  # undone and removed by the other undoer


def test_stale_node_cleanup_leaves_a_node_its_reaper_is_undoing(
    tmp_path: Path, mocker: MockerFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime.tempfile, "gettempdir", lambda: str(tmp_path))
    node = dead_node(tmp_path)
    undo = mocker.patch.object(runtime, "undo_host_changes", return_value=[])
    with undoing(node, wait=True):  # the reaper at work
        cleanup_stale_nodes()
    undo.assert_not_called()
    assert node.exists()
    cleanup_stale_nodes()  # the reaper died before undoing it: the next node does
    undo.assert_called_once()
    assert not node.exists()


def test_a_cgroup_directory_removed_meanwhile_is_no_error(tmp_path: Path, mocker: MockerFixture) -> None:
    hierarchy = tmp_path / "cgroup"
    (hierarchy / "root" / "kubepods" / "besteffort" / "pod1").mkdir(parents=True)
    mocker.patch.object(host, "cgroup_hierarchies", return_value=[hierarchy])
    real_scandir = os.scandir

    def racing_scandir(path: Any) -> Any:
        if Path(path).name == "besteffort":  # another undoer removed it while this one walked the tree
            (Path(path) / "pod1").rmdir()
            Path(path).rmdir()
        return real_scandir(path)

    mocker.patch.object(os, "scandir", racing_scandir)
    assert host.remove_cgroup_root("root") == []
    assert not (hierarchy / "root").exists()
