"""The fenced code blocks of the README and the docs pages, for the tests that check and run them.

A block's language says what it is: ``text`` is output or a picture (never run), ``python`` is a snippet
a user runs (it must carry a ``<!-- snippet: NAME -->`` line just above it, and a test runs it by that
name), ``bash`` holds commands a user runs (every command in it is checked by test_docs_site.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
from repo import REPO_ROOT

ROOT = REPO_ROOT
DOCS = ROOT / "docs"
README = ROOT / "README.md"
LANGUAGES = frozenset({"text", "python", "bash"})
_SNIPPET = re.compile(r"^<!-- snippet: ([a-z0-9-]+) -->$")


@attrs.frozen
class Block:
    """One fenced code block."""

    path: Path
    line: int  # of the opening fence, from 1
    language: str
    text: str
    snippet: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """The README and every page of the docs site."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, in order; an unclosed fence is an error naming its line."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("```"):
            index += 1
            continue
        start = index
        previous = lines[start - 1].strip() if start else ""
        match = _SNIPPET.match(previous)
        end = start + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{path}:{start + 1}: the code block is never closed")
        found.append(
            Block(
                path=path,
                line=start + 1,
                language=line[3:].strip(),
                text="\n".join(lines[start + 1 : end]) + "\n",
                snippet=match.group(1) if match else None,
            )
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in blocks_of(path)]


def snippet(name: str) -> str:
    """The code of the snippet ``name``; when several pages show it, they must show the same code."""
    texts = {block.text for block in all_blocks() if block.snippet == name}
    if not texts:
        raise LookupError(f"no code block is marked <!-- snippet: {name} -->")
    if len(texts) > 1:
        raise AssertionError(f"the copies of snippet {name} differ: {sorted(texts)}")
    return texts.pop()
