"""The ``k8s-backend`` entry point: subcommands, help, version and how errors end the process."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_support import cli

from k8s_backend.cli.main import main


def test_no_subcommand_prints_help_and_fails() -> None:
    result = cli([])
    assert result.code == 2


def test_every_subcommand_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("submit", "status", "kill", "list", "gc", "local"):
        assert command in out


def test_submit_help_shows_spark_submit_usage() -> None:
    result = cli(["submit", "--help"])
    assert result.code == 0
    assert "Usage: k8s-backend submit [options] <app.py> [app arguments]" in result.out
    assert "--deploy-mode MODE" in result.out


def test_submit_version() -> None:
    assert cli(["submit", "--version"]).out.startswith("k8s-backend ")


def test_usage_errors_are_one_line_on_stderr_with_exit_code_2() -> None:
    result = cli(["submit", "--master", "yarn", "app.py"])
    assert result.code == 2
    assert result.err.startswith(
        "k8s-backend: error: --master yarn: k8s-backend runs applications on Kubernetes"
    )
    assert result.err.count("\n") == 1


@pytest.mark.parametrize("module", ["k8s_backend.cli.main", "k8s_backend"])
def test_the_console_script_runs_as_a_module(module: str) -> None:
    # `python -m k8s_backend` is the command too, for when its script is not on PATH.
    done = subprocess.run(
        [sys.executable, "-m", module, "submit", "--conf", "bad"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--conf bad: a Spark property is written key=value" in done.stderr
