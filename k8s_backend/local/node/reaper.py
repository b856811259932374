"""``python -m k8s_backend.local.node.reaper OWNER_PID NODE_DIR``: undoes a real node's host changes
once its owner dies without stopping it (SIGKILL).

The owner's own processes (containerd, kubelet) die with it by the parent-death signal, but containers
run under shims that containerd detached, and mounts, cgroups and the bridge outlive every process. This
watcher runs in a session of its own, waits for the owner's exit on a pidfd (no polling), then undoes
what ``NODE_DIR/host-changes.json`` records. A normal stop terminates it first.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import sys
from pathlib import Path

from k8s_backend.local.node import host
from k8s_backend.local.node.runtime import CHANGES_FILE, undo_host_changes, undoing

log = logging.getLogger(__name__)


def wait_for_exit(pid: int) -> None:
    """Block until process ``pid`` exits (at once if it is already gone)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code."""
    if len(argv) != 2 or not argv[0].isdigit():
        print("usage: python -m k8s_backend.local.node.reaper OWNER_PID NODE_DIR", file=sys.stderr)
        return 2
    owner, node_dir = int(argv[0]), Path(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the owner's terminal is the owner's
    wait_for_exit(owner)
    with undoing(node_dir, wait=True) as mine:  # a new node's stale-node cleanup may be at it too
        changes = host.HostChanges.load(node_dir / CHANGES_FILE) if mine else None
        if changes is None:
            return 0  # stopped normally, or undone by another: nothing recorded any more
        left = undo_host_changes(changes)
        if left:
            print(f"the node at {node_dir} left: {'; '.join(left)}", file=sys.stderr)
            return 1
        shutil.rmtree(node_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
