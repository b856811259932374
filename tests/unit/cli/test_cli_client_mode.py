"""Client mode with a stand-in driver runtime: how the script runs, what Spark gets, exit codes."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from cli_support import APPS, IMAGE, AccessReviews, cli

from k8s_backend.testing import FakeKubernetes

MASTER = "pyk8s://https://k8s.test:6443"

SCRIPT = """
import json, sys
import helper
print(json.dumps({"argv": sys.argv, "name": __name__, "helper": helper.VALUE}))
"""


class RecordingRuntime:
    """Records what the driver was prepared with, and whether the leftover context was stopped."""

    def __init__(self) -> None:
        self.prepared: list[tuple[str, dict[str, str]]] = []
        self.stopped = 0

    def prepare(self, master: str, properties: Mapping[str, str]) -> None:
        self.prepared.append((master, dict(properties)))

    def failure(self) -> str | None:
        return None

    def stop(self) -> None:
        self.stopped += 1


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "helper.py").write_text("VALUE = 'from py-files'\n")
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return script


def test_the_script_runs_as_main_with_its_arguments_and_py_files(
    app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = RecordingRuntime()
    helper = tmp_path / "deps" / "helper.py"
    path_before, argv_before = list(sys.path), list(sys.argv)
    result = cli(
        ["submit", "--master", MASTER, "--conf", IMAGE, "--py-files", str(helper), str(app), "x", "--flag"],
        runtime=runtime,
    )
    assert result.code == 0, result.err
    printed = capsys.readouterr().out
    assert f'"argv": ["{app}", "x", "--flag"]' in printed
    assert '"name": "__main__"' in printed
    assert '"helper": "from py-files"' in printed
    assert (sys.path, sys.argv) == (path_before, argv_before)  # restored afterwards
    sys.modules.pop("helper", None)
    assert runtime.stopped == 1


def test_spark_gets_the_master_and_files_as_spark_submit_passes_them(app: Path, tmp_path: Path) -> None:
    runtime = RecordingRuntime()
    data = tmp_path / "data.csv"
    data.write_text("1\n")
    helper = tmp_path / "deps" / "helper.py"
    argv = [
        "submit",
        "--master",
        "k8s://https://k8s.test:6443",
        "--conf",
        IMAGE,
        "--files",
        f"file://{data}",
        "--py-files",
        str(helper),
        "--executor-memory",
        "2g",
        str(app),
    ]
    assert cli(argv, runtime=runtime).code == 0
    sys.modules.pop("helper", None)
    ((master, props),) = runtime.prepared
    assert master == MASTER
    assert props["spark.master"] == MASTER
    assert props["spark.submit.deployMode"] == "client"
    assert props["spark.executor.memory"] == "2g"
    assert props["spark.app.name"] == "script.py"
    assert props["spark.submit.pyFiles"] == str(helper)
    assert props["spark.files"] == f"{data},{helper}"  # py-files are shipped as files too


@pytest.mark.parametrize(("args", "code"), [([], 1), (["3"], 3), (["0"], 0)])
def test_exit_codes_propagate(args: list[str], code: int) -> None:
    runtime = RecordingRuntime()
    result = cli(
        ["submit", "--master", MASTER, "--conf", IMAGE, str(APPS / "fail.py"), *args], runtime=runtime
    )
    assert result.code == code
    assert runtime.stopped == 1


def test_an_uncaught_exception_prints_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    cli(["submit", "--master", MASTER, "--conf", IMAGE, str(APPS / "fail.py")], runtime=RecordingRuntime())
    assert "RuntimeError: the application failed on purpose" in capsys.readouterr().err


def test_a_message_given_to_sys_exit_is_printed_and_means_failure(tmp_path: Path) -> None:
    script = tmp_path / "bye.py"
    script.write_text("import sys\nsys.exit('cannot go on')\n")
    result = cli(["submit", "--master", MASTER, "--conf", IMAGE, str(script)], runtime=RecordingRuntime())
    assert result.code == 1
    assert "cannot go on" in result.err


class SignalledDuringStop(RecordingRuntime):
    """Stopping takes a second signal (an impatient runner): the cleanup must still run to its end."""

    def stop(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        super().stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminating_signal_stops_the_application_and_its_executors(
    tmp_path: Path, sig: signal.Signals
) -> None:
    script = tmp_path / "long.py"
    # The script signals itself, then would run for a long time: the signal must end it at once.
    script.write_text(
        f"import os, signal, time\nos.kill(os.getpid(), signal.{sig.name})\ntime.sleep(600)\n"
        "raise SystemExit('the signal did not end the script')\n"
    )
    runtime = SignalledDuringStop()
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    result = cli(["submit", "--master", MASTER, "--conf", IMAGE, str(script)], runtime=runtime)
    assert result.code == 128 + sig, result.err
    assert f"{sig.name} received; stopping the application" in result.err
    assert runtime.stopped == 1, "the SparkContext (and with it the executor pods) was stopped"
    assert {s: signal.getsignal(s) for s in before} == before, "the handlers are put back"


def test_the_cluster_is_checked_before_the_driver_starts(app: Path) -> None:
    runtime = RecordingRuntime()
    fake = FakeKubernetes()
    result = cli(
        ["submit", "--master", MASTER, "--conf", IMAGE, str(app)],
        AccessReviews(fake, denied={("create", "pods")}),
        runtime=runtime,
    )
    assert result.code == 2
    assert "missing permission: create pods in namespace default" in result.err
    assert runtime.prepared == []


def test_the_heartbeat_lease_permissions_are_checked_before_the_driver_starts(app: Path) -> None:
    runtime = RecordingRuntime()
    result = cli(
        ["submit", "--master", MASTER, "--conf", IMAGE, str(app)],
        AccessReviews(FakeKubernetes(), denied={("patch", "leases")}),
        runtime=runtime,
    )
    assert result.code == 2
    assert "missing permission: patch leases" in result.err, result.err
    assert runtime.prepared == []
    disabled = cli(
        [
            "submit", "--master", MASTER, "--conf", IMAGE,
            "--conf", "spark.kubernetes.driver.heartbeat.enabled=false", str(APPS / "fail.py"), "0",
        ],
        AccessReviews(FakeKubernetes(), denied={("patch", "leases")}),
        runtime=RecordingRuntime(),
    )
    assert disabled.code == 0, disabled.err


def test_the_local_cluster_needs_no_preflight() -> None:
    runtime = RecordingRuntime()
    fake = FakeKubernetes()
    fake.fail_next("*", None, status=500, count=100)  # any API call would fail the submission
    result = cli(["submit", "--master", "pyk8s://local", str(APPS / "fail.py"), "0"], fake, runtime=runtime)
    assert result.code == 0, result.err
    assert runtime.prepared[0][0] == "pyk8s://local"
    assert fake.calls == []
