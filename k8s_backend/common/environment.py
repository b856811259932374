"""One environment variable set for a while, then put back as it was (unset if it was)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def variable_set(name: str, value: Callable[[str | None], str]) -> Iterator[None]:
    """``os.environ[name]`` is ``value(its value before)`` inside the block, and as before after it.

    For what reads the environment and takes no other: pyspark hands spark-submit a copy of
    ``os.environ``. Not for concurrent use with other writers of the same variable.
    """
    before = os.environ.get(name)
    os.environ[name] = value(before)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
