"""How the driver's end reaches the backend, without a JVM: the stop that runs once and tells the JVM,
SIGTERM and SIGHUP turned into an interrupt, and a JVM that died first."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from py4j.protocol import Py4JNetworkError

from k8s_backend.common.signals import Terminated, exit_on_termination, raise_terminated, signals_held
from k8s_backend.spark.bridge import JvmDriverEndpoint, PythonBackendCallbacks
from k8s_backend.spark.factory import jvm_unreachable

WAIT = 10.0


class SlowBackend:
    """A backend whose stop() blocks until the test lets it finish."""

    def __init__(self) -> None:
        self.stops = 0
        self.release = threading.Event()

    def application_id(self) -> str:
        return "spark-app"

    def stop(self) -> None:
        self.stops += 1
        self.release.wait(WAIT)


class TestStopRunsOnceAndTellsTheJvm:
    def test_two_stops_at_once_run_one_cleanup_and_the_jvm_learns_before_either_returns(self) -> None:
        # The JVM's stop (its shutdown hook) and Python's own at exit may come together.
        backend, events = SlowBackend(), []
        hooks: Any = backend  # the hooks stop() needs
        callbacks = PythonBackendCallbacks(
            hooks,
            on_stopped=lambda: events.append("cleaned"),
            tell_stopped=lambda: events.append("told the JVM"),
            stop_timeout=WAIT,
        )
        stoppers = [threading.Thread(target=callbacks.stop) for _ in range(2)]
        for stopper in stoppers:
            stopper.start()
        assert not callbacks.stopped
        backend.release.set()
        for stopper in stoppers:
            stopper.join(WAIT)
        assert callbacks.stopped and backend.stops == 1
        assert events == ["cleaned", "told the JVM"]

    def test_the_jvm_is_told_through_the_java_backend_and_a_dead_jvm_is_no_error(self) -> None:
        calls: list[str] = []

        class Java:
            def pythonStopped(self) -> None:
                calls.append("pythonStopped")

        JvmDriverEndpoint(Java()).backend_stopped()
        assert calls == ["pythonStopped"]

        class DeadJava:
            def pythonStopped(self) -> None:
                raise Py4JNetworkError("Answer from Java side is empty")

        JvmDriverEndpoint(DeadJava()).backend_stopped()  # logged at debug, not raised


@pytest.fixture
def default_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("default_handlers")
class TestTerminationSignals:
    def test_sigterm_and_sighup_interrupt_the_main_thread_as_ctrl_c_does(self) -> None:
        exit_on_termination()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with pytest.raises(Terminated) as raised:
                os.kill(os.getpid(), sig)
                threading.Event().wait(WAIT)  # the handler raises here, in the main thread
            # A KeyboardInterrupt, so that Py4J drops the connection of a call it interrupts.
            assert isinstance(raised.value, KeyboardInterrupt) and raised.value.signum == sig

    def test_a_handler_of_someone_else_is_kept(self) -> None:
        def mine(signum: int, frame: Any) -> None: ...

        signal.signal(signal.SIGTERM, mine)
        exit_on_termination()
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) is raise_terminated

    def test_nothing_is_installed_from_another_thread(self) -> None:
        thread = threading.Thread(target=exit_on_termination)
        thread.start()
        thread.join(WAIT)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    def test_the_cleanup_holds_the_signals_and_puts_the_handlers_back(self) -> None:
        exit_on_termination()
        before = signal.getsignal(signal.SIGINT)
        with signals_held():
            assert {signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)} == {
                signal.SIG_IGN
            }
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: the cleanup is not cut short
        assert signal.getsignal(signal.SIGTERM) is raise_terminated
        assert signal.getsignal(signal.SIGINT) is before


def test_a_jvm_that_died_first_is_recognised_from_the_error() -> None:
    assert jvm_unreachable(Py4JNetworkError("Answer from Java side is empty"))
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as refused:
            raise RuntimeError("could not stop") from refused
    except RuntimeError as wrapped:
        assert jvm_unreachable(wrapped)
    assert not jvm_unreachable(RuntimeError("a Java exception: the JVM answered"))
