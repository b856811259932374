"""``python -m k8s_backend.local.node build``: build (or validate) the cached node binaries."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from k8s_backend.local.control_plane.build import BuildError, find_go
from k8s_backend.local.node.build import NODE_BINARIES, MissingDependency, NodeBuilder, ensure_host_tools

if TYPE_CHECKING:
    from k8s_backend.local.node.oci import OciImage


def print_flushed(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m k8s_backend.local.node")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser(
        "build", help="build the pinned node binaries into the cache, or check the cached ones"
    )
    build.add_argument(
        "--optional",
        action="store_true",
        help="when Go or a build dependency is missing, say why and succeed (the tests marked 'node' skip)",
    )
    build.add_argument(
        "--no-images",
        action="store_true",
        help="the binaries only, not the sandbox, Spark and driver images (built on first use then)",
    )
    args = parser.parse_args(argv)
    if args.optional and os.geteuid() != 0:
        print("skipped: a real node needs root (containerd, runc, cgroups, a bridge); the tests marked "
              "'node' will be skipped", file=sys.stderr)  # fmt: skip
        return 0
    builder = NodeBuilder(progress=print_flushed)
    if args.optional and builder.cached() is None:
        try:
            find_go()  # cached binaries need no Go; a build does
        except BuildError as error:
            print(f"skipped: {error}; the tests marked 'node' will be skipped", file=sys.stderr)
            return 0
    try:
        binaries = builder.ensure()
        ensure_host_tools(print_flushed)  # what the running node uses on this machine
    except MissingDependency as error:
        if args.optional:
            print(f"skipped: {error}; the tests marked 'node' will be skipped", file=sys.stderr)
            return 0
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for binary in NODE_BINARIES:
        print(f"{binary.key} {binary.version}: {binaries.directory / binary.key}")
    return 0 if args.no_images else build_images(optional=args.optional)


def build_images(*, optional: bool) -> int:
    """Build (or find) the sandbox and Spark images' layers, a line per image; the exit code."""
    from k8s_backend.local.node.images import ImageBuilder, have_image_tools

    missing = have_image_tools()
    if missing is not None:
        print(f"{'skipped' if optional else 'error'}: {missing}", file=sys.stderr)
        return 0 if optional else 1
    builder = ImageBuilder(progress=lambda line: print(line, flush=True))
    try:
        images = [builder.pause(), builder.spark()]
    except MissingDependency as error:
        print(f"{'skipped' if optional else 'error'}: {error}", file=sys.stderr)
        return 0 if optional else 1
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for image in images:
        _print_image(image, builder.directory)
    try:
        driver = builder.driver()
    except BuildError as error:  # pip reaches no package index, or this is no checkout
        print(f"{'skipped' if optional else 'error'}: the driver image: {error}", file=sys.stderr)
        return 0 if optional else 1
    _print_image(driver, builder.directory)
    return 0


def _print_image(image: OciImage, directory: Path) -> None:
    size = sum(layer.stat().st_size for layer in image.layers) >> 20
    print(f"{image.name}: {len(image.layers)} layers, {size} MiB, in {directory}")


if __name__ == "__main__":
    sys.exit(main())
