"""Render the configuration reference (Markdown) from the keys table.

``python -m k8s_backend.conf.docs`` prints it; ``--write docs/configuration.md`` replaces the text
between ``<!-- conf-table:start -->`` and ``<!-- conf-table:end -->``; ``--check docs/configuration.md``
exits 1 when that text is stale (``tox -e docs`` runs the check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from k8s_backend.conf.keys import SECTIONS, Key

START_MARKER = "<!-- conf-table:start -->"
END_MARKER = "<!-- conf-table:end -->"

_INTRO = (
    "Generated from the keys table (`k8s_backend/conf/keys*.py`) by "
    "`python -m k8s_backend.conf.docs --write docs/configuration.md`; do not edit by hand. "
    "Defaults are Spark 4.3's. "
    "Sizes take Spark units (`512m`, `4g`), durations take `ms`, `s`, `min`, `h`, `d`; a plain number is "
    "in the unit the kind names. Unknown `spark.kubernetes.*` keys are logged with the nearest known key."
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_cell(row: Key) -> str:
    parts = [f"falls back to `{name}`" for name in row.fallbacks]
    if row.default is not None:
        parts.append(f"`{row.default}`" if row.default else "empty")
    return ", then ".join(parts) if parts else "—"


def _meaning_cell(row: Key) -> str:
    text = row.doc
    notes = [row.kind.value]
    if row.check is not None:
        notes.append(row.check.accepted)
    text += f" *({'; '.join(notes)})*"
    if row.spark_default is not None and row.spark_default != "*":
        text += f" Spark's own entry says `{row.spark_default}`: {row.spark_default_reason}."
    return text


def render() -> str:
    """The Markdown text that goes between the page's markers (without the markers), one ``##`` section
    per :data:`~k8s_backend.conf.keys.SECTIONS` entry."""
    lines = [_INTRO, ""]
    for section in SECTIONS:
        lines += [f"## {section.title}", "", "| Key | Default | Meaning |", "| --- | --- | --- |"]
        lines += [
            f"| `{_cell(row.name)}` | {_cell(_default_cell(row))} | {_cell(_meaning_cell(row))} |"
            for row in section.keys
        ]
        lines.append("")
    return "\n".join(lines)


def replace_between_markers(
    document: str, table: str, start_marker: str = START_MARKER, end_marker: str = END_MARKER
) -> str:
    """``document`` with the text between the markers replaced by ``table``."""
    start = document.find(start_marker)
    end = document.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"the document needs {start_marker} followed by {end_marker}")
    return document[: start + len(start_marker)] + "\n" + table + "\n" + document[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m k8s_backend.conf.docs", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the table between the markers in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if the table in FILE is stale")
    args = parser.parse_args(argv)
    table = render()
    if args.write is None and args.check is None:
        sys.stdout.write(table + "\n")
        return 0
    path = Path(args.write or args.check)
    current = path.read_text(encoding="utf-8")
    updated = replace_between_markers(current, table)
    if args.check is not None:
        if updated != current:
            sys.stderr.write(
                f"{path}: the configuration table is stale; run python -m k8s_backend.conf.docs "
                f"--write {path}\n"
            )
            return 1
        return 0
    path.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
