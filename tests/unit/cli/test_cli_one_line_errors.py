"""What a failure looks like on the command line: one line on stderr and a non-zero exit code; with -v
also the traceback (and what the failure holds, e.g. a driver JVM's output)."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cli_support import APPS, IMAGE, cli

from k8s_backend.cli.apps import commands as app_commands
from k8s_backend.cli.main import quiet_py4j_interrupts
from k8s_backend.common.failure_sink import FAILURE_RECORD
from k8s_backend.spark.jvm_start import DriverStartError, HeldStderr, start_failure

MASTER = "pyk8s://https://k8s.test:6443"
REASON = "Executor image nosuch/image:1 cannot be pulled (ErrImagePull: not found) after 3s"

UNRESOLVED = """\
:: loading settings :: file = /tmp/ivysettings.xml
\t\t:: org.example.nothere#nothing;0.0.1: not found
Exception in thread "main" java.lang.RuntimeException: [unresolved dependency: \
org.example.nothere#nothing;0.0.1: not found]
\tat org.apache.spark.util.MavenUtils$.resolveMavenCoordinates(MavenUtils.scala:539)
"""


class FailedRuntime:
    """A driver whose backend failed the application: the script then fails with a Java error. As the
    backend does, it logs the failure (with ``log_failure``) while the script runs."""

    def __init__(
        self, reason: str | None, error: BaseException | None = None, *, log_failure: bool = False
    ) -> None:
        self.reason = reason
        self.error = error
        self.log_failure = log_failure
        self.stopped = 0

    def prepare(self, master: str, properties: Mapping[str, str]) -> None:
        if self.error is not None:
            raise self.error
        if self.log_failure:
            backend_log = logging.getLogger("k8s_backend.backend.hooks")
            backend_log.error("Application failed: %s", self.reason, extra=FAILURE_RECORD)

    def failure(self) -> str | None:
        return self.reason

    def stop(self) -> None:
        self.stopped += 1


def submit(
    *options: str, app: Path = APPS / "fail.py", app_args: tuple[str, ...] = (), runtime: Any, **deps: Any
) -> Any:
    argv = ["submit", "--master", MASTER, "--conf", IMAGE, *options, str(app), *app_args]
    return cli(argv, runtime=runtime, **deps)


def test_a_script_failing_after_the_backend_gave_up_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    runtime = FailedRuntime(REASON)
    result = submit(runtime=runtime)
    assert result.code == 1
    assert result.err.splitlines() == [f"k8s-backend: error: the application failed: {REASON}"]
    assert "Traceback" not in capsys.readouterr().err
    assert runtime.stopped == 1


def test_the_backends_failure_record_is_left_to_the_one_line_and_v_shows_it() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger().addHandler(handler)
    try:
        quiet = submit(runtime=FailedRuntime(REASON, log_failure=True))
        assert stream.getvalue() == ""
        assert quiet.err.splitlines() == [f"k8s-backend: error: the application failed: {REASON}"]
        loud = submit("-v", runtime=FailedRuntime(REASON, log_failure=True))
        assert stream.getvalue() == f"Application failed: {REASON}\n"
        assert loud.err.splitlines()[-1] == quiet.err.splitlines()[0]
        logging.getLogger("k8s_backend.backend.hooks").error("after the run", extra=FAILURE_RECORD)
        assert stream.getvalue().endswith("after the run\n"), "only while the command runs the driver"
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.parametrize("exit_code", ["0", "3"])
def test_the_failure_is_told_when_the_script_caught_the_error_and_exited(exit_code: str) -> None:
    result = submit(app_args=(exit_code,), runtime=FailedRuntime(REASON))  # fail.py exits with its argument
    assert result.err.splitlines() == [f"k8s-backend: error: the application failed: {REASON}"]
    assert result.code == max(int(exit_code), 1)


def test_v_adds_the_scripts_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    result = submit("-v", runtime=FailedRuntime(REASON))
    assert result.code == 1 and f"the application failed: {REASON}" in result.err
    assert "RuntimeError: the application failed on purpose" in capsys.readouterr().err


def test_a_scripts_own_error_keeps_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    # Not k8s_backend's failure: the user's bug, told as `python app.py` tells it.
    result = submit(runtime=FailedRuntime(None))
    assert result.code == 1 and "error" not in result.err
    assert "RuntimeError: the application failed on purpose" in capsys.readouterr().err


def test_a_driver_jvm_that_did_not_start_is_one_line_and_v_shows_its_output() -> None:
    error = start_failure(UNRESOLVED)
    quiet = submit(runtime=FailedRuntime(None, error))
    assert quiet.code == 2
    assert quiet.err.splitlines() == [f"k8s-backend: error: {error}"]
    loud = submit(runtime=FailedRuntime(None, error), verbosity=1)
    assert "Traceback" in loud.err and "MavenUtils" in loud.err
    assert loud.err.splitlines()[-1] == f"k8s-backend: error: {error}"


def test_the_jvms_reason_is_read_from_its_output() -> None:
    error = start_failure(UNRESOLVED)
    assert isinstance(error, DriverStartError) and error.output == UNRESOLVED
    assert str(error).startswith(
        "the driver JVM did not start: unresolved dependency: org.example.nothere#nothing;0.0.1: not found. "
        "check the coordinates in --packages"
    )
    usage = start_failure("Error: Unrecognized option: --bogus\nUsage: spark-submit [options]\n")
    assert str(usage).startswith("the driver JVM did not start: Unrecognized option: --bogus. see its output")
    assert "it printed no reason" in str(start_failure(""))


def test_an_unforeseen_error_is_one_line_and_v_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> int:
        raise LookupError("something no check foresaw")

    monkeypatch.setattr(app_commands, "list_command", broken)
    quiet = cli(["list", "--master", MASTER])
    assert quiet.code == 1
    told = "k8s-backend: error: LookupError: something no check foresaw"
    assert quiet.err.splitlines() == [f"{told} (k8s-backend list -v ... shows the traceback)"]
    loud = cli(["list", "--master", MASTER], verbosity=1)
    assert "Traceback" in loud.err and loud.err.splitlines()[-1] == told


def test_py4j_interrupt_records_on_the_root_logger_are_dropped() -> None:
    def record(name: str, path: str) -> logging.LogRecord:
        message = "KeyboardInterrupt while sending command."
        return logging.LogRecord(name, logging.ERROR, path, 1, message, (), None)

    py4j = os.path.join(os.sep, "site-packages", "py4j", "java_gateway.py")
    assert not quiet_py4j_interrupts(record("root", py4j))
    assert quiet_py4j_interrupts(record("k8s_backend.backend.hooks", py4j))
    assert quiet_py4j_interrupts(record("root", os.path.join(os.sep, "app", "main.py")))


def test_java_stack_frames_are_left_out_of_the_jvms_log_after_its_start() -> None:
    read_fd, write_fd = os.pipe()
    sink_read, sink_write = os.pipe()
    held = HeldStderr(read_fd, sink_write, java_stacks=False)
    held.start()
    os.write(write_fd, b"starting\n")
    held.release()
    os.write(write_fd, b"26/12/02 ERROR SparkContext: Error initializing SparkContext.\njava.lang.Illegal")
    os.write(write_fd, b"StateException: stopped\n\tat org.apache.spark.X.y(X.scala:1)\n")
    os.write(write_fd, b"\t... 12 more\nnext\n")
    os.close(write_fd)
    assert held.output() == ""  # released: nothing is held any more
    os.close(sink_write)
    with os.fdopen(sink_read, "rb") as sink:
        assert sink.read().decode() == (
            "starting\n26/12/02 ERROR SparkContext: Error initializing SparkContext.\n"
            "java.lang.IllegalStateException: stopped\nnext\n"
        )


def _broken_connection(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")  # a failure no check foresaw


@pytest.mark.parametrize("command", [["status", "spark-1"], ["list"], ["gc"]])
def test_every_command_tells_an_unforeseen_error_in_one_line_and_v_shows_its_traceback(
    command: list[str],
) -> None:
    quiet = cli(command, connect=_broken_connection)
    assert quiet.code == 1
    assert quiet.err.strip().splitlines() == [
        f"k8s-backend: error: RuntimeError: boom (k8s-backend {command[0]} -v ... shows the traceback)"
    ]
    package = logging.getLogger("k8s_backend")
    level = package.level
    try:
        verbose = cli([*command, "-v"], connect=_broken_connection)
        assert package.level == logging.INFO  # -v raises k8s_backend's loggers, as submit's does
    finally:
        package.setLevel(level)
    assert verbose.code == 1
    assert "Traceback (most recent call last)" in verbose.err
    assert verbose.err.strip().splitlines()[-1] == "k8s-backend: error: RuntimeError: boom"
