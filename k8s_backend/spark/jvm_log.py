"""Which lines of the driver JVM's log reach this process's stderr once the JVM is up.

Two things can be left out, each only when asked:

- the frames of Java stack traces (``\\tat ...``, ``\\t... 12 more``): the log line and the exception's
  message above them stay;
- the log records that merely follow from k8s_backend failing the application, when the caller tells
  that failure itself (``k8s-backend submit`` prints it in one line): the bridge's own "k8s_backend stops
  the application: ..." and Spark's "Error initializing SparkContext." *with* the exception the stop
  causes ("Spark context stopped while waiting for backend"). They are recognised only while the
  failure is k8s_backend's (the caller's predicate says so); any other error the JVM logs is kept.

Pure line logic: :class:`JvmLogFilter` takes complete lines (without their newline) and returns those to
write; :class:`k8s_backend.spark.jvm_start.HeldStderr` feeds it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen
class Consequence:
    """A JVM log record that follows from k8s_backend failing the application.

    :param record: what its first line holds (the end of the logger's name and the message's start, as
        any log4j pattern that prints both writes them).
    :param exception: the start of the line after it, the exception it must carry to count; None when the
        record carries none.
    """

    record: bytes
    exception: bytes | None = None


FAILURE_CONSEQUENCES = (
    # PyK8sSchedulerBackend.failApplication, which the Python backend calls when it gives up.
    Consequence(b"PyK8sSchedulerBackend: k8s_backend stops the application: "),
    # The SparkContext was still waiting for the backend (an unpullable image, a Hard gang timeout).
    Consequence(
        b"SparkContext: Error initializing SparkContext.",
        b"java.lang.IllegalStateException: Spark context stopped while waiting for backend",
    ),
)


def is_java_stack_line(line: bytes) -> bool:
    """A frame of a Java stack trace the JVM's log prints under an error (``\\tat ...``, ``\\t... 12
    more``), as opposed to the log line and the exception's message above it."""
    return line.startswith((b"\tat ", b"\t... "))


def is_exception_continuation(line: bytes) -> bool:
    """A line of the exception under a log record after its first line: frames and its causes."""
    return is_java_stack_line(line) or line.lstrip(b"\t").startswith((b"Caused by: ", b"Suppressed: "))


class JvmLogFilter:
    """Line by line, what of the JVM's log to write (see the module doc). Not thread-safe: one reader.

    :param java_stacks: keep the frames of Java stack traces.
    :param consequences: the records that follow from k8s_backend's failure.
    """

    def __init__(
        self, *, java_stacks: bool = True, consequences: tuple[Consequence, ...] = FAILURE_CONSEQUENCES
    ) -> None:
        self._java_stacks = java_stacks
        self._consequences = consequences
        self._failure_told: Callable[[], bool] | None = None
        self._pending: tuple[bytes, Consequence] | None = None  # a record line awaiting its exception
        self._dropping = False  # inside a left-out record: its exception's frames and causes go too

    @property
    def passes_everything(self) -> bool:
        """Whether every line is written as it is (the caller may then skip splitting lines)."""
        return self._java_stacks and self._failure_told is None and self._pending is None

    def leave_out_failure_consequences(self, failure_told: Callable[[], bool]) -> None:
        """Leave out the records that follow from k8s_backend's failure while ``failure_told()`` is
        true: the application failed and the caller tells it."""
        self._failure_told = failure_told

    def lines(self, line: bytes) -> list[bytes]:
        """The lines to write now for ``line`` (one line, without its newline)."""
        if self._pending is not None:
            held, awaited = self._pending
            self._pending = None
            if awaited.exception is not None and line.startswith(awaited.exception):
                self._dropping = True
                return []
            return [*self._keep(held), *self.lines(line)]
        if self._dropping:
            if is_exception_continuation(line):
                return []
            self._dropping = False
        consequence = self._consequence(line)
        if consequence is None:
            return self._keep(line)
        if consequence.exception is None:
            self._dropping = True
        else:
            self._pending = (line, consequence)
        return []

    def flush(self) -> list[bytes]:
        """At the end of the JVM's output: a record line still waiting for its exception is kept."""
        pending, self._pending = self._pending, None
        return self._keep(pending[0]) if pending is not None else []

    def _keep(self, line: bytes) -> list[bytes]:
        return [] if not self._java_stacks and is_java_stack_line(line) else [line]

    def _consequence(self, line: bytes) -> Consequence | None:
        if self._failure_told is None:
            return None
        found = next((c for c in self._consequences if c.record in line), None)
        return found if found is not None and self._failure_told() else None
