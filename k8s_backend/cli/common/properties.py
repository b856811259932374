"""Spark properties files (``spark-defaults.conf``, ``--properties-file``): where they are and how they read.

The format is Java's ``java.util.Properties``: ``key=value``, ``key: value`` or ``key value``; ``#`` and
``!`` comments; a trailing backslash continues a line; ``\\t``, ``\\n``, ``\\uXXXX`` escapes. Values are
trimmed, as Spark does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from k8s_backend.cli.common.errors import UsageError

DEFAULTS_FILE = "spark-defaults.conf"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=:"
_WHITESPACE = " \t\f"


def default_properties_file(environ: Mapping[str, str]) -> str | None:
    """spark-submit's lookup: ``$SPARK_CONF_DIR/spark-defaults.conf``, else ``$SPARK_HOME/conf/...``.

    Returns None when neither names an existing file.
    """
    conf_dir = environ.get("SPARK_CONF_DIR")
    if not conf_dir and environ.get("SPARK_HOME"):
        conf_dir = os.path.join(environ["SPARK_HOME"], "conf")
    if not conf_dir:
        return None
    path = os.path.join(conf_dir, DEFAULTS_FILE)
    return path if os.path.isfile(path) else None


def read_properties_file(path: str) -> dict[str, str]:
    """The properties in ``path``; :class:`UsageError` naming the file if it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise UsageError(f"--properties-file {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--properties-file {path}: is a directory, not a properties file") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"--properties-file {path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise UsageError(f"--properties-file {path}: cannot be read ({error.strerror})") from None
    try:
        return parse_properties(text)
    except ValueError as error:
        raise UsageError(f"--properties-file {path}: {error}") from None


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``java.util.Properties`` text; later keys win; values are trimmed."""
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split_entry(line, number)
        result[key] = value.strip()
    return result


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Logical lines (continuations joined, comments and blank lines dropped) with their line number."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip(_WHITESPACE)
        if not pending:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the last one continues the line
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def _split_entry(line: str, number: int) -> tuple[str, str]:
    """Split a logical line at the first unescaped separator (``=``, ``:`` or whitespace)."""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in _SEPARATORS or char in _WHITESPACE:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_WHITESPACE)
    if rest[:1] and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_WHITESPACE)
    return _unescape(key, number), _unescape(rest, number)


def _unescape(text: str, number: int) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u":
            digits = text[index + 2 : index + 6]
            try:
                if len(digits) != 4:
                    raise ValueError
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise ValueError(
                    f"line {number}: malformed \\uXXXX escape {text[index : index + 6]!r}"
                ) from None
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)
