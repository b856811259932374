"""The command reference (docs/cli.md) is generated from the command's own parsers and must stay fresh."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from repo import REPO_ROOT

from k8s_backend.cli import reference
from k8s_backend.cli.main import SUBMIT, build_parser
from k8s_backend.cli.submit.command import USAGE

PAGE = REPO_ROOT / "docs" / "cli.md"


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return dict(reference._subparsers(build_parser()).choices)


def test_the_page_is_fresh() -> None:
    current = PAGE.read_text(encoding="utf-8")
    updated = reference.replace_between_markers(
        current, reference.render(), reference.START_MARKER, reference.END_MARKER
    )
    assert updated == current, (
        "docs/cli.md is stale: run python -m k8s_backend.cli.reference --write docs/cli.md"
    )


def test_every_subcommand_and_every_option_is_listed() -> None:
    text = reference.render()
    commands = subcommands()
    assert {"submit", "status", "kill", "list", "gc", "logs", "events", "local"} <= set(commands)
    for name, parser in commands.items():
        assert f"## `k8s-backend {name}`" in text
        if name == SUBMIT:
            continue
        section = text.split(f"## `k8s-backend {name}`", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                if option not in {"-h", "--help"}:
                    assert f"`{option}`" in section, f"{name}: {option} is missing"
    assert USAGE.rstrip("\n") in text  # submit's own parser: its --help text


def test_rows_show_values_defaults_and_expanded_help() -> None:
    text = reference.render()
    assert "| `--control-plane` `{embedded,kubernetes}` | `embedded` |" in text
    assert "address to listen on (default: 127.0.0.1)" in text  # %(default)s filled in
    assert "| `-c`, `--conf` `KEY=VALUE` (repeatable) | — |" in text
    assert "| `--dry-run` | — |" in text  # a switch: no value, no default
    assert "| `ID [ID ...]` | — | NAMESPACE:DRIVER_POD, DRIVER_POD or APP_ID |" in text
    assert "k8s-backend status [options] ID [ID ...]" in text
    assert "%(" not in text


def test_the_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    first = reference.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert reference.render() == first


def test_cli_writes_between_markers_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "cli.md"
    target.write_text(
        f"# CLI\n\n{reference.START_MARKER}\nold\n{reference.END_MARKER}\ntail\n", encoding="utf-8"
    )
    assert reference.main(["--check", str(target)]) == 1
    assert "stale" in capsys.readouterr().err
    assert reference.main(["--write", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert text == f"# CLI\n\n{reference.START_MARKER}\n{reference.render()}\n{reference.END_MARKER}\ntail\n"
    assert reference.main(["--check", str(target)]) == 0
    assert reference.main([]) == 0
    assert capsys.readouterr().out == reference.render() + "\n"


def test_markers_are_required(tmp_path: Path) -> None:
    target = tmp_path / "cli.md"
    target.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="needs <!-- cli-reference:start -->"):
        reference.main(["--check", str(target)])
