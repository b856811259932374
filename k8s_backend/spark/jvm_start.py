"""The driver JVM's start: its stderr is held until it is up, so a failed start is told in one line.

spark-submit (which pyspark runs to start the JVM) resolves ``--packages`` and checks its arguments
before the JVM serves Py4J; when that fails it prints Ivy's report and a Java stack, and pyspark raises
``PySparkRuntimeError [JAVA_GATEWAY_EXITED]``, which says nothing of why. While the JVM starts, its
stderr goes to a pipe this module reads: after a successful start what was held is written out and the
rest is passed through to this process's stderr as it comes (what the JVM would have written itself);
after a failed start it becomes :class:`DriverStartError`, whose message is the JVM's own reason and
whose :attr:`DriverStartError.output` keeps everything it printed (``k8s-backend submit -v`` shows it).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable

from k8s_backend.errors import K8sBackendError
from k8s_backend.spark.class_sharing import KEY as CLASS_SHARING_KEY
from k8s_backend.spark.jvm_log import JvmLogFilter

STDERR_FD = 2
EOF_WAIT = 10.0  # seconds to wait for the rest of a failed JVM's output once it exited

_EXCEPTION = re.compile(r'^Exception in thread "[^"]*" (?:[\w.$]+?)(?::\s*(?P<message>.*))?$')
_ERROR = re.compile(r"^Error: (?P<message>.+)$")


class DriverStartError(K8sBackendError, RuntimeError):
    """The driver JVM exited before it served Py4J (e.g. a ``--packages`` that cannot be resolved)."""

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def start_failure(output: str, what: str = "the driver JVM") -> DriverStartError:
    """The one-line error for a JVM (``what``) that exited while starting, from what it printed."""
    reason = ""
    for line in output.splitlines():
        found = _EXCEPTION.match(line.strip()) or _ERROR.match(line.strip())
        if found is not None:
            reason = (found.group("message") or line.strip()).strip()
            break
    if reason.startswith("[") and reason.endswith("]"):  # Spark lists unresolved dependencies so
        reason = reason[1:-1]
    hint = "see its output with -v (k8s-backend submit -v)"
    if any(word in reason for word in ("SharedArchiveFile", "ArchiveClassesAtExit", "CDS")):
        hint = f"a JVM without class data sharing needs {CLASS_SHARING_KEY}=false; " + hint
    if "unresolved dependency" in reason:
        hint = (
            "check the coordinates in --packages (spark.jars.packages), --repositories "
            "(spark.jars.repositories) and spark.jars.ivySettings; " + hint
        )
    told = reason or "it printed no reason"
    return DriverStartError(f"{what} did not start: {told}. {hint}", output=output)


class HeldStderr:
    """The read end of the JVM's stderr pipe, on a daemon thread: held, then passed through.

    Without ``java_stacks`` the frames of the Java stack traces the JVM logs after its start are left
    out (``k8s-backend submit`` shows them with -v): the log line and the exception's message stay.
    :meth:`leave_out_failure_consequences` also leaves out what the JVM logs because k8s_backend failed
    the application (:mod:`k8s_backend.spark.jvm_log`).
    """

    def __init__(self, read_fd: int, sink_fd: int = STDERR_FD, *, java_stacks: bool = True) -> None:
        self._read_fd = read_fd
        self._sink_fd = sink_fd
        self._filter = JvmLogFilter(java_stacks=java_stacks)
        self._partial = b""
        self._lock = threading.Lock()
        self._held: list[bytes] | None = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="k8s-backend-jvm-stderr", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def leave_out_failure_consequences(self, failure_told: Callable[[], bool]) -> None:
        """Leave out the JVM's log records that follow from k8s_backend's failure of the application
        (e.g. Spark's "Error initializing SparkContext." after an unpullable image) while
        ``failure_told()`` is true: the caller tells that failure itself."""
        with self._lock:
            self._filter.leave_out_failure_consequences(failure_told)

    def release(self) -> None:
        """The JVM is up: write what was held, and pass the rest through as it comes."""
        with self._lock:
            held, self._held = self._held or [], None
            self._pass(b"".join(held))

    def output(self, wait: float = EOF_WAIT) -> str:
        """Everything held so far, once the JVM closed its stderr (or after ``wait`` seconds)."""
        self._done.wait(wait)
        with self._lock:
            return b"".join(self._held or []).decode("utf-8", "replace")

    def wait_for_end(self, wait: float) -> bool:
        """Wait at most ``wait`` seconds for the JVM's output to end (it exited and closed its stderr) and
        for all of it to be written; returns whether it did."""
        return self._done.wait(wait)

    def _pump(self) -> None:
        try:
            with os.fdopen(self._read_fd, "rb", buffering=0) as pipe:
                while chunk := pipe.read(65536):
                    with self._lock:
                        if self._held is not None:
                            self._held.append(chunk)
                        else:
                            self._pass(chunk)
            with self._lock:
                if self._held is None:  # a record line still pending, the last line without its newline
                    self._end()
        finally:
            self._done.set()

    def _pass(self, chunk: bytes) -> None:
        if self._filter.passes_everything and not self._partial:
            self._write(chunk)
            return
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # what follows the last newline: the start of the next line
        kept = [kept for line in lines for kept in self._filter.lines(line)]
        self._write(b"".join(line + b"\n" for line in kept))

    def _end(self) -> None:
        partial, self._partial = self._partial, b""
        kept = [*(self._filter.lines(partial) if partial else []), *self._filter.flush()]
        self._write(b"".join(line + b"\n" for line in kept))

    def _write(self, data: bytes) -> None:
        while data:
            try:
                data = data[os.write(self._sink_fd, data) :]
            except OSError:  # this process's stderr is gone: the JVM's output has nowhere to go
                return
