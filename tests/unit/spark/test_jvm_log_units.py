"""What of the driver JVM's log reaches the terminal: the records that merely follow from k8s_backend
failing the application are left out only while that failure is k8s_backend's and the caller tells it;
every other error the JVM logs stays; and what the JVM prints while it exits still arrives."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

from k8s_backend.spark.gateway import STDERR_ATTRIBUTE, shut_down
from k8s_backend.spark.jvm_log import JvmLogFilter
from k8s_backend.spark.jvm_start import HeldStderr

# A stand-in for the driver JVM: it ends on the end of its stdin, as PythonGatewayServer does, and then
# prints its last words (as the JVM's shutdown hooks and -Xlog's exit output do) after a pause.
LAST_WORDS = (
    "import sys, time; sys.stdin.read(); time.sleep(0.5); "
    "sys.stderr.write('last words\\n'); sys.stderr.flush()"
)

STOPS = (
    b"26/12/02 05:08:29 ERROR PyK8sSchedulerBackend: k8s_backend stops the application: Executor image "
    b"nosuch/image:1 cannot be pulled"
)
INIT_ERROR = b"26/12/02 05:08:29 ERROR SparkContext: Error initializing SparkContext."
STOPPED_WAITING = b"java.lang.IllegalStateException: Spark context stopped while waiting for backend"
FRAMES = [b"\tat org.apache.spark.SparkContext.<init>(SparkContext.scala:1)", b"\t... 12 more"]
AFTER = b"26/12/02 05:08:30 WARN Something: next"
FAILED_RUN = [STOPS, INIT_ERROR, STOPPED_WAITING, *FRAMES, AFTER]


def shown(log: JvmLogFilter, lines: list[bytes]) -> list[bytes]:
    return [*(kept for line in lines for kept in log.lines(line)), *log.flush()]


def test_the_consequences_of_k8s_backends_failure_are_left_out_when_the_caller_tells_it() -> None:
    log = JvmLogFilter(java_stacks=False)
    log.leave_out_failure_consequences(lambda: True)
    assert shown(log, [b"before", *FAILED_RUN]) == [b"before", AFTER]


def test_they_stay_when_the_failure_is_not_k8s_backends() -> None:
    log = JvmLogFilter(java_stacks=False)
    log.leave_out_failure_consequences(lambda: False)
    assert shown(log, FAILED_RUN) == [STOPS, INIT_ERROR, STOPPED_WAITING, AFTER]


def test_they_stay_unless_asked() -> None:
    assert shown(JvmLogFilter(java_stacks=False), FAILED_RUN) == [STOPS, INIT_ERROR, STOPPED_WAITING, AFTER]
    assert shown(JvmLogFilter(java_stacks=True), FAILED_RUN) == FAILED_RUN


def test_a_context_that_failed_for_another_reason_is_kept_even_after_k8s_backends_failure() -> None:
    log = JvmLogFilter(java_stacks=True)
    log.leave_out_failure_consequences(lambda: True)
    other = b"java.lang.OutOfMemoryError: Java heap space"
    assert shown(log, [INIT_ERROR, other, *FRAMES, AFTER]) == [INIT_ERROR, other, *FRAMES, AFTER]


def test_with_java_stacks_the_left_out_records_take_their_frames_and_causes_along() -> None:
    log = JvmLogFilter(java_stacks=True)
    log.leave_out_failure_consequences(lambda: True)
    cause = [b"Caused by: java.lang.InterruptedException", b"\tat java.lang.Object.wait(Object.java:1)"]
    unrelated = b"26/12/02 05:08:31 ERROR Executor: Exception in task 0.0"
    lines = [INIT_ERROR, STOPPED_WAITING, *FRAMES, *cause, unrelated, *FRAMES]
    assert shown(log, lines) == [unrelated, *FRAMES]


def test_another_log_pattern_is_recognised_too() -> None:
    log = JvmLogFilter()
    log.leave_out_failure_consequences(lambda: True)
    record = b"2026-12-02T05:08:29Z ERROR org.apache.spark.SparkContext: Error initializing SparkContext."
    assert shown(log, [record, STOPPED_WAITING, *FRAMES, AFTER]) == [AFTER]


def test_a_record_line_waiting_for_its_exception_is_kept_at_the_end() -> None:
    log = JvmLogFilter()
    log.leave_out_failure_consequences(lambda: True)
    assert log.lines(INIT_ERROR) == []
    assert log.flush() == [INIT_ERROR]


def test_held_stderr_leaves_the_consequences_out_across_chunks() -> None:
    read_fd, write_fd = os.pipe()
    sink_read, sink_write = os.pipe()
    held = HeldStderr(read_fd, sink_write, java_stacks=False)
    held.start()
    os.write(write_fd, b"starting\n")
    held.release()
    held.leave_out_failure_consequences(lambda: True)
    text = b"\n".join(FAILED_RUN) + b"\nlast line without its newline"
    for start in range(0, len(text), 7):  # the pipe may cut the JVM's writes anywhere
        os.write(write_fd, text[start : start + 7])
    os.close(write_fd)
    held.output()  # waits for the end of the JVM's output
    os.close(sink_write)
    with os.fdopen(sink_read, "rb") as sink:
        assert sink.read() == b"starting\n" + AFTER + b"\nlast line without its newline\n"


def test_shut_down_ends_the_jvm_and_writes_its_last_output_before_it_returns() -> None:
    read_fd, write_fd = os.pipe()
    sink_read, sink_write = os.pipe()
    held = HeldStderr(read_fd, sink_write)
    held.start()
    jvm = subprocess.Popen([sys.executable, "-c", LAST_WORDS], stdin=subprocess.PIPE, stderr=write_fd)
    os.close(write_fd)
    held.release()
    gateway = SimpleNamespace(proc=jvm, **{STDERR_ATTRIBUTE: held})
    try:
        assert shut_down(gateway, wait=60)
    finally:
        jvm.kill()
    assert jvm.returncode == 0
    os.close(sink_write)
    with os.fdopen(sink_read, "rb") as sink:
        assert sink.read() == b"last words\n"
    assert shut_down(gateway, wait=60), "again: the JVM has exited already"


def test_shut_down_gives_up_on_a_jvm_that_does_not_exit() -> None:
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.PIPE)
    try:
        assert not shut_down(SimpleNamespace(proc=stuck), wait=0.2)
    finally:
        stuck.kill()
        stuck.wait()
