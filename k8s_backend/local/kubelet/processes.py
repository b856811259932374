"""Supervision of container processes: one session per container, log files, exit codes as a container
runtime reports them, SIGTERM → grace period → SIGKILL, and a memory-limit watchdog (OOMKilled).

A container is a process session (``start_new_session``): everything the main process starts stays in
it unless it calls ``setsid`` itself (pyspark's daemon only changes its process group), so killing the
session plays the part of a container runtime killing the container's cgroup.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from k8s_backend.common.clock import Clock, SystemClock

log = logging.getLogger(__name__)

OOM_EXIT_CODE = 137
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@attrs.frozen
class ExitStatus:
    """How a container process ended, in the terms of a container's ``state.terminated``."""

    exit_code: int
    reason: str  # Completed, Error or OOMKilled
    started_at: float
    finished_at: float
    signal: int | None = None
    message: str = ""


@attrs.frozen
class ProcInfo:
    """One line of the process table."""

    pid: int
    ppid: int
    pgrp: int
    session: int
    rss_bytes: int


def process_table() -> Iterator[ProcInfo]:
    """Every process visible in /proc (Linux). Processes that vanish while being read are skipped."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: fields start after the last ')'.
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) < 22 or fields[0] == b"Z":
            continue
        yield ProcInfo(
            int(entry), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[21]) * _PAGE_SIZE
        )


def session_members(session: int) -> list[int]:
    """The live processes of a session."""
    return [p.pid for p in process_table() if p.session == session]


def kill_session(session: int, sig: int = signal.SIGKILL, *, settle: float = 10.0) -> None:
    """Send ``sig`` to every process of a session.

    With SIGKILL, repeat until none is left (forks in flight) or ``settle`` seconds passed: a killed
    process lingers in the process table until the kernel has torn it down, which takes a while on a
    loaded machine, and a container counts as gone only once its processes are.
    """
    deadline = time.monotonic() + settle
    while True:
        members = session_members(session)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if sig != signal.SIGKILL or time.monotonic() >= deadline:
            return
        time.sleep(0.01)


# Runs first in every container process: ask Linux to SIGKILL it if the kubelet thread that started it
# dies (the last line of defence when the Python process itself is killed with SIGKILL, which leaves no
# chance to clean up), then become the container's command. A separate interpreter does this because
# subprocess's preexec_fn would run Python's at-fork handlers in the child, and those shut down sockets
# shared with the parent (py4j's connection to the driver JVM among them).
_LAUNCHER = """\
import ctypes, os, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(137)  # the kubelet is already gone
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    print(f"exec {sys.argv[2]}: {error}", file=sys.stderr)
    sys.exit(127)
"""


def _launch_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` behind the parent-death launcher where Linux supports it, else as it is."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), *argv]


class ProcessHandle:
    """A running container process. Thread-safe; ``on_exit`` runs once, on the process's waiter thread."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        log_path: Path,
        memory_limit: int | None,
        started_at: float,
        clock: Clock,
        on_exit: Callable[[ExitStatus], None],
    ) -> None:
        self.pid = proc.pid
        self.log_path = log_path
        self.memory_limit = memory_limit
        self.started_at = started_at
        self._proc = proc
        self._clock = clock
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._oom_killed = False
        self._grace_timer: threading.Timer | None = None
        self._kill_deadline: float | None = None
        self._status: ExitStatus | None = None
        self.exited = threading.Event()
        self._waiter = threading.Thread(target=self._wait, name=f"kubelet-wait-{proc.pid}", daemon=True)

    def start_waiting(self) -> None:
        """Start the thread that reaps the process and reports its exit (once the handle is registered)."""
        self._waiter.start()

    @property
    def status(self) -> ExitStatus | None:
        """The exit status once the process has ended."""
        return self._status

    def terminate(self, grace: float) -> None:
        """SIGTERM the main process, then SIGKILL the whole container after ``grace`` seconds.

        Called again with a shorter grace period (a second, more urgent deletion), the SIGKILL comes
        sooner; a longer one changes nothing.
        """
        if self.exited.is_set():
            return
        if grace <= 0:
            self.kill()
            return
        deadline = time.monotonic() + grace
        with self._lock:
            if self._kill_deadline is not None and self._kill_deadline <= deadline:
                return
            first = self._kill_deadline is None
            if self._grace_timer is not None:
                self._grace_timer.cancel()
            self._kill_deadline = deadline
            self._grace_timer = threading.Timer(grace, self.kill)
            self._grace_timer.daemon = True
            self._grace_timer.start()
        if first:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def kill(self, *, oom: bool = False) -> None:
        """SIGKILL every process of the container; ``oom=True`` reports it as OOMKilled."""
        with self._lock:
            if self.exited.is_set():
                return
            if oom:
                self._oom_killed = True
        kill_session(self.pid)

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        """Block until the process has ended and ``on_exit`` ran (or the timeout passed)."""
        self.exited.wait(timeout)
        return self._status

    def join(self, timeout: float | None = None) -> None:
        if self._waiter.is_alive():
            self._waiter.join(timeout)

    def _wait(self) -> None:
        code = self._proc.wait()
        # The main process is gone: like a container runtime, take the rest of the container with it.
        kill_session(self.pid)
        with self._lock:
            if self._grace_timer is not None:
                self._grace_timer.cancel()
            oom = self._oom_killed
        sig = -code if code < 0 else None
        exit_code = 128 + sig if sig is not None else code
        if oom:
            status = ExitStatus(
                OOM_EXIT_CODE,
                "OOMKilled",
                self.started_at,
                self._clock.now(),
                signal.SIGKILL,
                f"memory limit of {self.memory_limit} bytes exceeded",
            )
        else:
            reason = "Completed" if exit_code == 0 else "Error"
            status = ExitStatus(exit_code, reason, self.started_at, self._clock.now(), sig)
        self._status = status
        try:
            self._on_exit(status)
        except Exception:  # the callback belongs to the kubelet; never lose the exit because of it
            log.exception("exit callback of process %s failed", self.pid)
        finally:
            self.exited.set()


class ProcessSupervisor:
    """Starts container processes and keeps watch over them until :meth:`stop_all`."""

    def __init__(self, *, clock: Clock | None = None, memory_check_interval: float = 0.2) -> None:
        if memory_check_interval <= 0:
            raise ValueError(
                f"memory_check_interval: {memory_check_interval!r} must be a positive number of seconds"
            )
        self._clock = clock or SystemClock()
        self._interval = memory_check_interval
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._handles: dict[int, ProcessHandle] = {}
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        log_path: Path,
        memory_limit: int | None,
        on_exit: Callable[[ExitStatus], None],
    ) -> ProcessHandle:
        """Start a process in its own session, stdout and stderr appended to ``log_path``.

        Raises OSError if the program cannot be executed.
        """
        log_path.parent.mkdir(parents=True, exist_ok=True)
        Path(cwd).mkdir(parents=True, exist_ok=True)
        # Starting and registering happen under one lock that stop_all also takes: no process can be
        # started unseen while everything is being stopped.
        with self._start_lock:
            if self._stop.is_set():
                raise RuntimeError("the process supervisor is stopped; it starts no more processes")
            return self._start_locked(argv, env, cwd, log_path, memory_limit, on_exit)

    def _start_locked(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        log_path: Path,
        memory_limit: int | None,
        on_exit: Callable[[ExitStatus], None],
    ) -> ProcessHandle:
        with open(log_path, "ab") as output:
            proc = subprocess.Popen(
                _launch_argv(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def forget_then_report(status: ExitStatus) -> None:
            with self._lock:
                self._handles.pop(proc.pid, None)
            on_exit(status)

        handle = ProcessHandle(
            proc,
            log_path=log_path,
            memory_limit=memory_limit,
            started_at=self._clock.now(),
            clock=self._clock,
            on_exit=forget_then_report,
        )
        with self._lock:
            self._handles[proc.pid] = handle
            if memory_limit is not None and self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch_memory, name="kubelet-oom", daemon=True)
                self._watchdog.start()
        handle.start_waiting()
        log.debug("started pid %s: %s", proc.pid, " ".join(argv))
        return handle

    def live(self) -> list[ProcessHandle]:
        """The processes that have not ended yet."""
        with self._lock:
            return list(self._handles.values())

    def stop_all(self, grace: float = 2.0) -> None:
        """Terminate every process (SIGTERM, SIGKILL after ``grace``), wait for them and stop watching."""
        with self._start_lock:
            self._stop.set()
        handles = self.live()
        for handle in handles:
            handle.terminate(grace)
        for handle in handles:
            if handle.wait(grace + 5.0) is None:
                handle.kill()
                handle.wait(5.0)
            kill_session(handle.pid)
            handle.join(5.0)
        if self._watchdog is not None:
            self._watchdog.join(5.0)

    def _watch_memory(self) -> None:
        # One scan of the process table per tick serves every container, whatever their number.
        while not self._stop.wait(self._interval):
            limited = {h.pid: h for h in self.live() if h.memory_limit is not None}
            if not limited:
                continue
            usage: dict[int, int] = {}
            for proc in process_table():
                if proc.session in limited:
                    usage[proc.session] = usage.get(proc.session, 0) + proc.rss_bytes
            for session, rss in usage.items():
                handle = limited[session]
                if handle.memory_limit is not None and rss > handle.memory_limit:
                    log.info(
                        "pid %s uses %d bytes, over its limit of %d: OOM kill",
                        session,
                        rss,
                        handle.memory_limit,
                    )
                    handle.kill(oom=True)
