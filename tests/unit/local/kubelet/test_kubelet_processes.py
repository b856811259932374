"""Process supervision with real short-lived processes: exit codes, grace periods, OOM, sessions."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubelet_support import ReadySignal, wait_for

from k8s_backend.local.kubelet.processes import (
    ExitStatus,
    ProcessHandle,
    ProcessSupervisor,
    session_members,
)

PY = sys.executable
IGNORE_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)"


@pytest.fixture
def supervisor() -> Iterator[ProcessSupervisor]:
    running = ProcessSupervisor(memory_check_interval=0.05)
    yield running
    running.stop_all(grace=0.5)


def start(
    supervisor: ProcessSupervisor, tmp_path: Path, code: str, memory_limit: int | None = None
) -> ProcessHandle:
    exits: list[ExitStatus] = []
    return supervisor.start(
        [PY, "-c", code],
        env=dict(os.environ),
        cwd=str(tmp_path / "cwd"),
        log_path=tmp_path / "logs" / "c.log",
        memory_limit=memory_limit,
        on_exit=exits.append,
    )


@pytest.fixture
def ready(tmp_path: Path) -> Iterator[ReadySignal]:
    signal_ = ReadySignal(tmp_path)
    yield signal_
    signal_.close()


def test_exit_code_and_output_are_captured(supervisor: ProcessSupervisor, tmp_path: Path) -> None:
    handle = start(supervisor, tmp_path, "import sys; print('hello'); sys.exit(3)")
    status = handle.wait(10)
    assert status is not None
    assert (status.exit_code, status.reason, status.signal) == (3, "Error", None)
    assert status.finished_at >= status.started_at
    assert handle.log_path.read_text() == "hello\n"
    assert supervisor.live() == []


def test_zero_exit_is_completed(supervisor: ProcessSupervisor, tmp_path: Path) -> None:
    status = start(supervisor, tmp_path, "pass").wait(10)
    assert status is not None and (status.exit_code, status.reason) == (0, "Completed")


def test_sigterm_ends_an_obedient_process_with_143(
    supervisor: ProcessSupervisor, tmp_path: Path, ready: ReadySignal
) -> None:
    handle = start(supervisor, tmp_path, ready.code())
    ready.wait()
    handle.terminate(grace=30)
    status = handle.wait(10)
    assert status is not None and (status.exit_code, status.signal) == (143, signal.SIGTERM)


def test_sigkill_follows_the_grace_period_when_sigterm_is_ignored(
    supervisor: ProcessSupervisor, tmp_path: Path, ready: ReadySignal
) -> None:
    handle = start(supervisor, tmp_path, ready.code(IGNORE_TERM))
    ready.wait()
    handle.terminate(grace=0.3)
    status = handle.wait(10)
    assert status is not None
    assert (status.exit_code, status.reason, status.signal) == (137, "Error", signal.SIGKILL)


def test_a_shorter_second_grace_period_kills_sooner(
    supervisor: ProcessSupervisor, tmp_path: Path, ready: ReadySignal
) -> None:
    handle = start(supervisor, tmp_path, ready.code(IGNORE_TERM))
    ready.wait()
    handle.terminate(grace=600)
    assert handle.wait(0.3) is None
    handle.terminate(grace=0.1)
    status = handle.wait(10)
    assert status is not None and status.exit_code == 137


def test_memory_limit_watchdog_kills_with_oom(supervisor: ProcessSupervisor, tmp_path: Path) -> None:
    # b"x" * n touches every page, so the resident size really grows past the limit.
    handle = start(
        supervisor, tmp_path, "import time; b = b'x' * (400 * 1024 * 1024); time.sleep(60)", 128 * 1024 * 1024
    )
    status = handle.wait(20)
    assert status is not None
    assert (status.exit_code, status.reason) == (137, "OOMKilled")
    assert "memory limit" in status.message


def test_a_process_within_its_limit_is_left_alone(supervisor: ProcessSupervisor, tmp_path: Path) -> None:
    status = start(supervisor, tmp_path, "b = b'x' * (1024 * 1024)", 512 * 1024 * 1024).wait(10)
    assert status is not None and status.reason == "Completed"


def test_children_in_other_process_groups_die_with_the_container(
    supervisor: ProcessSupervisor, tmp_path: Path, ready: ReadySignal
) -> None:
    # Like pyspark's daemon: a child that moves to its own process group (but stays in the session).
    child_code = ready.code("import os; os.setpgid(0, 0)")
    code = (
        f"import subprocess, sys, time\nchild = subprocess.Popen([sys.executable, '-c', {child_code!r}])\n"
        + ("print(child.pid, flush=True)\ntime.sleep(60)")
    )
    handle = start(supervisor, tmp_path, code)
    ready.wait()
    # The child may signal before its parent has printed the child's pid: wait for the line itself.
    assert wait_for(lambda: handle.log_path.read_text().endswith("\n"), 20), "the parent never printed"
    child = int(handle.log_path.read_text().split()[0])
    assert child in session_members(handle.pid)
    handle.terminate(grace=5)
    assert handle.wait(10) is not None
    assert session_members(handle.pid) == []


def test_stop_all_leaves_nothing_behind(tmp_path: Path, ready: ReadySignal) -> None:
    supervisor = ProcessSupervisor()
    handles = [start(supervisor, tmp_path, code) for code in (ready.code(IGNORE_TERM), ready.code())]
    for _ in handles:
        ready.wait()
    supervisor.stop_all(grace=0.2)
    assert supervisor.live() == []
    assert all(session_members(h.pid) == [] for h in handles)
    with pytest.raises(RuntimeError, match="stopped"):
        start(supervisor, tmp_path, "pass")


def test_bad_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="memory_check_interval: 0"):
        ProcessSupervisor(memory_check_interval=0)
