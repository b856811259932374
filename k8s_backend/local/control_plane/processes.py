"""Supervision of the control plane's processes: started behind the kubelet's parent-death launcher, one
log file each, stopped with SIGTERM then SIGKILL.

Linux delivers PR_SET_PDEATHSIG when the *thread* that forked the child ends, not the process, so every
process is started from one spawner thread owned by the control plane: a control plane entered on a
short-lived thread (a pool worker) keeps running, and a SIGKILLed owner still takes them all along.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The kubelet's launcher is reused, not copied: one implementation of the parent-death guard.
from k8s_backend.local.kubelet.processes import _launch_argv, kill_session, session_members

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 40


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" if unreadable)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Spawner:
    """Starts processes from one long-lived thread (see the module docstring). Close it last."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="control-plane-spawner")

    def popen(
        self, argv: Sequence[str], *, log_path: Path, env: Mapping[str, str]
    ) -> subprocess.Popen[bytes]:
        """``argv`` behind the parent-death launcher, in its own session, output to ``log_path``."""

        def start() -> subprocess.Popen[bytes]:
            with log_path.open("ab") as out:
                return subprocess.Popen(
                    _launch_argv(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=dict(env),
                    start_new_session=True,  # one session per process: SIGKILL takes any child along
                    close_fds=True,
                )

        return self._executor.submit(start).result()

    def close(self) -> None:
        self._executor.shutdown(wait=True)


class ManagedProcess:
    """One control-plane process and its log."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def exit_code(self) -> int | None:
        return self._proc.poll()

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The end of the log, for error messages."""
        return log_tail(self.log_path, lines)

    def stop(self, grace: float) -> None:
        """SIGTERM, then SIGKILL of the whole session after ``grace`` seconds; reaps the process."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                log.warning("%s (pid %s) ignored SIGTERM for %.0f s: SIGKILL", self.name, self.pid, grace)
        # The session is the process and anything it started; nothing of it may outlive the cluster.
        kill_session(self._proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)

    def gone(self) -> bool:
        """True once neither the process nor anything of its session is left."""
        return not self.alive() and not session_members(self._proc.pid)


def wait_gone(processes: Sequence[ManagedProcess], timeout: float = 10.0) -> bool:
    """Wait until every process (and its session) is gone."""
    deadline = time.monotonic() + timeout
    while not all(p.gone() for p in processes):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


WORK_DIR_PREFIX = "k8s-backend-control-plane-"
OWNER_FILE = "owner.pid"


def remove_stale_work_dirs() -> None:
    """Remove the work dirs of control planes whose owner died without cleaning up (SIGKILL, SIGTERM):
    their processes died with it (parent-death signal), but etcd's data would stay on disk."""
    for path in Path(tempfile.gettempdir()).glob(f"{WORK_DIR_PREFIX}*"):
        try:
            owner = int((path / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            log.info("removing %s, left by process %s", path, owner)
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the process that binds it comes a moment later)."""
    return free_ports(1)[0]


def free_ports(count: int) -> tuple[int, ...]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now.

    Each socket stays bound until all are: a port just released may be handed out again at once, so two
    calls of :func:`free_port` in a row can answer the same port (etcd was once given one port for its
    client and peer URLs, and refused to start)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return tuple(ports)


def etcd_healthy(client_url: str) -> bool:
    host, port = client_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("GET", "/health")
        body = connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    return b'"health":"true"' in body
