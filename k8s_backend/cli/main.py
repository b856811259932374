"""The ``k8s-backend`` console command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from k8s_backend.cli import local


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per tool."""
    parser = argparse.ArgumentParser(
        prog="k8s-backend",
        description="Tools around k8s_backend, the Python Kubernetes scheduler backend for Spark.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    local.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``k8s-backend`` with ``argv`` (default: the process arguments); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
