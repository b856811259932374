"""``python -m k8s_backend.local.control_plane build``: build (or validate) the cached control plane."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from k8s_backend.local.control_plane.build import ALL_BINARIES, BuildError, ControlPlaneBuilder, find_go


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m k8s_backend.local.control_plane")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the pinned binaries into the cache, or check the cached ones")
    build.add_argument(
        "--optional",
        action="store_true",
        help="without Go, say so and succeed (the test suite's tier marked 'real' is then skipped)",
    )
    args = parser.parse_args(argv)
    builder = ControlPlaneBuilder(progress=lambda line: print(line, flush=True))
    if args.optional and builder.cached() is None:
        try:
            find_go()  # cached binaries need no Go; a build does
        except BuildError as error:
            print(f"skipped: {error}; the tests marked 'real' will be skipped", file=sys.stderr)
            return 0
    try:
        binaries = builder.ensure()
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in ALL_BINARIES:
        print(f"{name}: {binaries.path(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
