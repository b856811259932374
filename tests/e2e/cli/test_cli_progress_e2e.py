"""The progress line of a real client-mode ``k8s-backend submit`` on ``pyk8s://local`` (a separate
process, as a user runs it): shown at the default level, once, and ``-v`` lets no py4j chatter through."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import APPS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CONF = {
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.driver.host": "127.0.0.1",  # client mode: the executors reach the driver on this machine
    "spark.driver.bindAddress": "127.0.0.1",
}


def submit(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("k8s-backend")
    start = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    confs = [item for key, value in CONF.items() for item in ("--conf", f"{key}={value}")]
    argv = [*start, "submit", "--master", "pyk8s://local", "--num-executors", "2", *confs, *options]
    argv += [str(APPS / "pi.py"), "2"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)


def progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "executors: " in line]


def test_the_default_level_shows_the_progress_line_once_per_change(tmp_path: Path) -> None:
    done = submit(tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Pi is roughly" in done.stdout
    lines = progress_lines(done.stderr)
    assert lines, done.stderr[-4000:]
    assert all(line.startswith("executors: 2 requested, ") for line in lines), lines
    assert any(line.endswith(", 2 registered") for line in lines), lines
    assert all(a != b for a, b in itertools.pairwise(lines)), lines  # one line per change
    assert "Received command" not in done.stderr


def test_v_shows_k8s_backends_log_and_the_line_once_but_no_py4j_chatter(tmp_path: Path) -> None:
    done = submit(tmp_path, "-v")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "INFO k8s_backend." in done.stderr
    lines = progress_lines(done.stderr)
    assert lines, done.stderr[-4000:]
    assert all(" INFO k8s_backend.progress: executors: " in line for line in lines), lines  # no 2nd copy
    assert "Received command" not in done.stderr
    assert " py4j" not in done.stderr
