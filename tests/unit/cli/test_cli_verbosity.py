"""``-v``/``--verbose``: read before a submit's application file only, and raising k8s_backend's own
loggers, never the root logger (py4j's "Received command" chatter stays out of the terminal)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

import pytest

from k8s_backend.cli import main as main_module
from k8s_backend.cli.common.deps import Dependencies
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.main import configure_logging, main, quiet_py4j_interrupts, verbosity


@contextlib.contextmanager
def python_default_logging() -> Iterator[None]:
    """Logging as a fresh interpreter has it (pytest puts its capture handler on the root logger for
    each test phase, so this is entered in the test's body), put back afterwards."""
    root = logging.getLogger()
    names = ("k8s_backend", "py4j", "py4j.clientserver")
    levels = {n: logging.getLogger(n).level for n in names}
    saved = (root.level, list(root.handlers), levels, list(root.filters))
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.setLevel(saved[0])
        root.handlers = saved[1]
        root.filters = saved[3]
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["submit", "app.py"], 0),
        (["submit", "-v", "app.py"], 1),
        (["submit", "--verbose", "--master", "pyk8s://local", "app.py", "-v"], 1),
        (["submit", "-v", "--verbose", "app.py"], 2),
        (["submit", "app.py", "-v", "--verbose"], 0),  # the application's own arguments
        (["submit", "--conf", "bad", "-v", "app.py"], 0),  # refused: submit says why when it runs
        (["status", "-v"], 0),
        ([], 0),
    ],
)
def test_verbosity_counts_the_switches_before_the_application_file(argv: list[str], expected: int) -> None:
    assert verbosity(argv) == expected


def test_a_v_after_the_application_file_is_the_applications() -> None:
    args = parse_submit_args(["--master", "pyk8s://local", "app.py", "-v", "--verbose"])
    assert (args.app, args.app_args) == ("app.py", ("-v", "--verbose"))
    assert (args.verbose, args.verbosity) == (False, 0)


@pytest.mark.parametrize(("count", "level"), [(1, logging.INFO), (2, logging.DEBUG)])
def test_v_raises_k8s_backend_only(count: int, level: int) -> None:
    with python_default_logging():
        configure_logging(count)
        assert logging.getLogger("k8s_backend").level == level
        assert logging.getLogger("k8s_backend.allocation.allocator").isEnabledFor(level)
        assert logging.getLogger().level == logging.WARNING
        for name in ("py4j", "py4j.clientserver"):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO)


def test_without_v_everything_stays_at_warning() -> None:
    with python_default_logging():
        configure_logging(0)
        assert quiet_py4j_interrupts in logging.getLogger().filters  # Ctrl-C in a JVM call: one line
        assert logging.getLogger().level == logging.WARNING
        assert logging.getLogger("k8s_backend").level == logging.NOTSET
        assert not logging.getLogger("k8s_backend.backend.hooks").isEnabledFor(logging.INFO)


def test_main_reads_v_only_before_the_application_file(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], int]] = []

    def run(argv: Sequence[str], deps: Dependencies) -> int:
        seen.append((list(argv), logging.getLogger("k8s_backend").getEffectiveLevel()))
        return 0

    monkeypatch.setattr(main_module, "run", run)
    with python_default_logging():
        assert main(["submit", "app.py", "-v"]) == 0
        assert main(["submit", "-v", "app.py", "x"]) == 0
    assert seen == [
        (["submit", "app.py", "-v"], logging.WARNING),  # passed on to the application, logging unchanged
        (["submit", "-v", "app.py", "x"], logging.INFO),
    ]


def test_log_lines_carry_the_iso_time_of_histories_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    with python_default_logging():
        configure_logging(0)
        record = logging.LogRecord("k8s_backend.x", logging.WARNING, __file__, 1, "stuck", None, None)
        record.created = 1_796_178_456.25  # 2026-12-02T02:27:36.250Z
        logging.getLogger("k8s_backend.x").handle(record)
    err = capsys.readouterr().err
    assert err == "2026-12-02T02:27:36.250Z WARNING k8s_backend.x: stuck\n", err
