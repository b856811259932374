"""Render the ``k8s-backend`` command reference (Markdown) from the command's own parsers.

``python -m k8s_backend.cli.reference`` prints it; ``--write docs/cli.md`` replaces the text between
``<!-- cli-reference:start -->`` and ``<!-- cli-reference:end -->``; ``--check docs/cli.md`` exits 1
when that text is stale (``tox -e docs`` runs the check). Every subcommand but ``submit`` is read from
:func:`k8s_backend.cli.main.build_parser`'s argparse parsers; ``submit`` takes spark-submit's arguments
through its own parser, so its reference is its ``--help`` text. The tables are built from the parsers'
actions rather than from ``format_help()``, whose layout changes between Python versions and with the
terminal's width: the page must not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from k8s_backend.cli.main import SUBMIT, build_parser
from k8s_backend.cli.submit.command import USAGE as SUBMIT_USAGE
from k8s_backend.conf.docs import replace_between_markers

START_MARKER = "<!-- cli-reference:start -->"
END_MARKER = "<!-- cli-reference:end -->"
PROG = "k8s-backend"

_INTRO = (
    "Generated from the command's parsers (`k8s_backend/cli/main.py`, `build_parser`; `submit`'s "
    "`--help` text) by `python -m k8s_backend.cli.reference --write docs/cli.md`; do not edit by hand. "
    "Every command also takes `-h`/`--help`."
)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise ValueError(f"{parser.prog} has no subcommands")


def _escape(text: str) -> str:
    """``text`` safe in a Markdown table cell: no pipe, no line break, no HTML tag, no emphasis."""
    text = " ".join(text.split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _expand(action: argparse.Action) -> str:
    """The action's help with ``%(default)s``-style fields filled in, as argparse does."""
    text = action.help or ""
    if "%" not in text:
        return text
    params = {name: value for name, value in vars(action).items() if value is not argparse.SUPPRESS}
    if action.choices is not None:
        params["choices"] = ", ".join(str(choice) for choice in action.choices)
    return text % params


def _value_name(action: argparse.Action) -> str:
    if isinstance(action.metavar, str):
        return action.metavar
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _usage_item(action: argparse.Action) -> str:
    name = _value_name(action)
    if action.nargs == "+":
        return f"{name} [{name} ...]"
    if action.nargs == "*":
        return f"[{name} ...]"
    if action.nargs == "?":
        return f"[{name}]"
    return name


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _default_cell(action: argparse.Action) -> str:
    default = action.default
    if not _takes_value(action) or default in (None, "", [], argparse.SUPPRESS):
        return "—"
    return f"`{default}`"


def _option_cell(action: argparse.Action) -> str:
    names = ", ".join(f"`{option}`" for option in action.option_strings)
    if not _takes_value(action):
        return names
    value = _value_name(action)
    repeat = " (repeatable)" if isinstance(action, argparse._AppendAction) else ""
    return f"{names} `{value}`{repeat}"


def _command_section(name: str, summary: str, parser: argparse.ArgumentParser) -> Iterator[str]:
    actions = [action for action in parser._actions if not isinstance(action, argparse._HelpAction)]
    positionals = [action for action in actions if not action.option_strings]
    options = [action for action in actions if action.option_strings]
    usage = " ".join([PROG, name, "[options]", *(_usage_item(action) for action in positionals)])
    yield f"## `{PROG} {name}`"
    yield ""
    yield (parser.description or summary).strip()
    yield ""
    yield "```text"
    yield usage
    yield "```"
    yield ""
    yield "| Argument | Default | Meaning |"
    yield "| --- | --- | --- |"
    for action in positionals:
        yield f"| `{_usage_item(action)}` | — | {_escape(_expand(action))} |"
    for action in options:
        yield f"| {_option_cell(action)} | {_default_cell(action)} | {_escape(_expand(action))} |"
    yield ""


def render() -> str:
    """The Markdown text that goes between the page's markers (without the markers)."""
    parser = build_parser()
    subparsers = _subparsers(parser)
    summaries = {choice.dest: choice.help or "" for choice in subparsers._choices_actions}
    lines = [_INTRO, "", "| Command | What it does |", "| --- | --- |"]
    lines += [f"| [`{PROG} {name}`](#{PROG}-{name}) | {_escape(text)} |" for name, text in summaries.items()]
    lines += ["", f"`{PROG} --version` prints the installed version.", ""]
    lines += [f"## `{PROG} {SUBMIT}`", "", "```text", SUBMIT_USAGE.rstrip("\n"), "```", ""]
    for name, command in subparsers.choices.items():
        if name != SUBMIT:
            lines += _command_section(name, summaries.get(name, ""), command)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``--write FILE``, ``--check FILE``, or print the reference; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m k8s_backend.cli.reference", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the reference between the markers in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if the reference in FILE is stale")
    args = parser.parse_args(argv)
    reference = render()
    if args.write is None and args.check is None:
        sys.stdout.write(reference + "\n")
        return 0
    path = Path(args.write or args.check)
    current = path.read_text(encoding="utf-8")
    updated = replace_between_markers(current, reference, START_MARKER, END_MARKER)
    if args.check is not None:
        if updated != current:
            sys.stderr.write(
                f"{path}: the command reference is stale; run python -m k8s_backend.cli.reference "
                f"--write {path}\n"
            )
            return 1
        return 0
    path.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
