"""``k8s-backend local --control-plane kubernetes --runtime containers``: the same real node for users. It
prints how to connect (the node's image, the bridge gateway as the driver host), kubectl sees the node
Ready, and Ctrl-C stops everything: no bridge, no node directory, no process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from node_env import node_missing

from k8s_backend.local.node import NodeBuilder
from k8s_backend.local.node.host import HostChanges
from k8s_backend.local.node.runtime import CHANGES_FILE, WORK_DIR_PREFIX

pytestmark = [pytest.mark.node, pytest.mark.timeout(600)]


def kubectl(kubeconfig: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(NodeBuilder().binaries.path("kubectl")), "--kubeconfig", str(kubeconfig), *args]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def node_dirs_of(owner: int) -> list[Path]:
    """The node directories whose record names ``owner`` (other test runs may have nodes too)."""
    found = []
    for path in Path(tempfile.gettempdir()).glob(f"{WORK_DIR_PREFIX}*"):
        changes = HostChanges.load(path / CHANGES_FILE)
        if changes is not None and changes.owner == owner:
            found.append(path)
    return found


def test_the_local_command_runs_a_real_node_and_stops_it_on_ctrl_c(tmp_path: Path) -> None:
    why = node_missing()
    if why is not None:
        pytest.skip(why)
    work = tmp_path / "work"
    command = subprocess.Popen(
        [sys.executable, "-m", "k8s_backend.cli.main", "local", "--control-plane", "kubernetes",
         "--runtime", "containers", "--work-dir", str(work)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert command.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith("Press Ctrl-C"):
            line = command.stdout.readline()
            assert line, f"the command ended early: {lines}"
            lines.append(line.rstrip("\n"))
        text = "\n".join(lines)
        assert "and a real node (kubelet, containerd, runc)" in text, text
        host = text.split("--conf spark.driver.host=")[1].split()[0]
        assert host.startswith("198.1"), text  # the bridge's gateway in 198.18.0.0/15
        kubeconfig = work / "kubeconfig"
        nodes = kubectl(kubeconfig, tmp_path, "get", "nodes", "-o", "name")
        assert nodes.returncode == 0 and nodes.stdout.split() == ["node/k8s-backend-kubelet"], nodes
        ready = kubectl(kubeconfig, tmp_path, "wait", "--for=condition=Ready", "node/k8s-backend-kubelet",
                        "--timeout=120s")  # fmt: skip
        assert ready.returncode == 0, ready
        (node_dir,) = node_dirs_of(command.pid)
    finally:
        command.send_signal(signal.SIGINT)
        command.communicate(timeout=180)
    assert command.returncode == 0
    assert not node_dir.exists()
    deadline = time.monotonic() + 30
    while subprocess.run(["pgrep", "-f", str(node_dir)], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "a process of the node outlived the command"
        time.sleep(0.2)
