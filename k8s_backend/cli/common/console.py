"""Where the command writes: results on stdout, progress and problems on stderr (as spark-submit logs)."""

from __future__ import annotations

import sys
from typing import TextIO

import attrs


@attrs.frozen
class Console:
    """The command's two streams (``None`` means the process's own, looked up at write time)."""

    stdout: TextIO | None = None
    stderr: TextIO | None = None

    def result(self, text: str) -> None:
        """A line of the command's answer (status tables, ids)."""
        print(text, file=self.stdout or sys.stdout, flush=True)

    def info(self, text: str) -> None:
        """Progress: status changes, what was created or deleted."""
        print(text, file=self.stderr or sys.stderr, flush=True)

    def error(self, text: str) -> None:
        print(f"k8s-backend: error: {text}", file=self.stderr or sys.stderr, flush=True)

    def warning(self, text: str) -> None:
        print(f"k8s-backend: warning: {text}", file=self.stderr or sys.stderr, flush=True)
