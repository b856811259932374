"""The ``k8s-backend`` console command: ``submit``, ``status``, ``kill``, ``list``, ``gc`` and ``local``.

``submit`` takes spark-submit's arguments exactly as typed (options before the application file,
everything after it is the application's), so it is parsed by its own parser rather than argparse.
Errors are reported in one line; bad input exits with code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence

import attrs

from k8s_backend.cli import local
from k8s_backend.cli.apps import commands as app_commands
from k8s_backend.cli.common.deps import Dependencies, version
from k8s_backend.cli.common.errors import CliError
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.errors import K8sBackendError
from k8s_backend.tracking.times import iso_time

SUBMIT = "submit"
PACKAGE_LOGGER = "k8s_backend"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per tool (``submit`` is listed here, parsed by its own parser)."""
    parser = argparse.ArgumentParser(
        prog="k8s-backend",
        description="Run and manage Spark applications whose executors k8s_backend manages on Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"k8s-backend {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.add_parser(
        SUBMIT,
        help="run a Python Spark application (spark-submit's arguments; see `k8s-backend submit --help`)",
        add_help=False,
    )
    app_commands.add_parsers(subparsers)
    local.add_parser(subparsers)
    for name, command in subparsers.choices.items():
        if name != SUBMIT:  # submit reads -v itself, only before the application file
            command.add_argument(
                "-v",
                "--verbose",
                action="count",
                default=0,
                help="show what k8s_backend does (INFO; -v -v: DEBUG) and the traceback of an error",
            )
    return parser


def run(argv: Sequence[str], deps: Dependencies) -> int:
    """Run the command with explicit dependencies; returns the exit code."""
    args = list(argv)
    try:
        if args and args[0] == SUBMIT:
            from k8s_backend.cli.submit.command import submit_command

            return submit_command(args[1:], deps)
        parser = build_parser()
        namespace = parser.parse_args(args)
        level = int(getattr(namespace, "verbose", 0) or 0)
        if level > deps.verbosity:
            deps = attrs.evolve(deps, verbosity=level)
            raise_package_logging(level)
        handler: app_commands.Handler | None = getattr(namespace, "handler", None)
        if handler is not None:
            return handler(namespace, deps)
        func = getattr(namespace, "func", None)  # `local` uses argparse's func convention
        if func is None:
            parser.print_help()
            return 2
        result: int = func(namespace)
        return result
    except CliError as error:
        return report(error, error.message, error.exit_code, deps)
    except K8sBackendError as error:  # a setting read after the first checks (e.g. while connecting),
        # no JDK to build the bridge jar, an unsupported pyspark, a driver JVM that did not start
        return report(error, str(error), 2, deps)
    except KeyboardInterrupt:
        deps.console.info("k8s-backend: interrupted")
        return 130
    except Exception as error:  # a failure no check foresaw: still one line, the traceback with -v
        told = f"{type(error).__name__}: {error}"
        if not deps.verbosity:
            command = args[0] if args and not args[0].startswith("-") else None
            if command is not None:
                told += f" (k8s-backend {command} -v ... shows the traceback)"
        return report(error, told, 1, deps)


def report(error: BaseException, message: str, exit_code: int, deps: Dependencies) -> int:
    """Tell ``error`` in one line on stderr; with -v, first what it holds (e.g. the output of a driver
    JVM that did not start) and its traceback. Returns ``exit_code``."""
    if deps.verbosity:
        stream = deps.console.stderr or sys.stderr
        output = getattr(error, "output", "")
        if output:
            print(output.rstrip("\n"), file=stream)
        traceback.print_exception(error, file=stream)
    deps.console.error(message)
    return exit_code


def verbosity(argv: Sequence[str]) -> int:
    """How many ``-v``/``--verbose`` a ``submit`` has before its application file (after it, they are
    the application's arguments); 0 for the other commands and for a command line ``submit`` refuses
    (it says why when it runs)."""
    if not argv or argv[0] != SUBMIT:
        return 0
    try:
        return parse_submit_args(argv[1:]).verbosity
    except CliError:
        return 0


def configure_logging(verbosity: int) -> None:
    """Python's WARNING for every logger, on stderr; ``-v`` raises k8s_backend's own loggers to INFO and
    ``-v -v`` to DEBUG. The root logger stays at WARNING, so py4j's and other libraries' chatter stays
    out of the terminal. The progress line (see :mod:`k8s_backend.tracking.progress`) is shown either
    way, once: plain at the default level, as a log record of ``k8s_backend.progress`` with ``-v``."""
    handler = logging.StreamHandler()
    handler.setFormatter(IsoTimeFormatter(LOG_FORMAT))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    if verbosity:
        raise_package_logging(verbosity)
    else:
        logging.getLogger().addFilter(quiet_py4j_interrupts)


def raise_package_logging(verbosity: int) -> None:
    """``-v``: k8s_backend's own loggers at INFO; ``-v -v``: DEBUG."""
    logging.getLogger(PACKAGE_LOGGER).setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


class IsoTimeFormatter(logging.Formatter):
    """Log records stamped as executor histories, ``status()`` and the JSON output are: ISO 8601, UTC,
    milliseconds, ``Z`` (``2026-12-02T02:17:36.250Z``), so a time in a log line can be found in them."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return iso_time(record.created)


def quiet_py4j_interrupts(record: logging.LogRecord) -> bool:
    """Drop what Py4J logs on the root logger, with a traceback, when Ctrl-C interrupts a call into the
    driver JVM (its own KeyboardInterrupt handling, and pyspark's SIGINT handler cancelling jobs on the
    connection that call holds): the command says it was interrupted, once. Shown with -v."""
    return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``k8s-backend`` with ``argv`` (default: the process arguments); returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    level = verbosity(args)
    configure_logging(level)
    return run(args, Dependencies(verbosity=level))


if __name__ == "__main__":
    sys.exit(main())
