"""The configuration reference (docs/configuration.md) is rendered from the keys table and must stay fresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo import REPO_ROOT

from k8s_backend.conf import docs, keys

PAGE = REPO_ROOT / "docs" / "configuration.md"


def test_docs_page_table_is_fresh() -> None:
    current = PAGE.read_text(encoding="utf-8")
    assert docs.replace_between_markers(current, docs.render()) == current, (
        "docs/configuration.md's table is stale: run python -m k8s_backend.conf.docs "
        "--write docs/configuration.md"
    )
    assert docs.main(["--check", str(PAGE)]) == 0


def test_every_key_is_documented_with_its_default() -> None:
    table = docs.render()
    for row in keys.KEYS:
        escaped = row.name.replace("|", "\\|")
        assert f"| `{escaped}` |" in table
    assert "| `spark.kubernetes.allocation.batch.size` | `20` |" in table
    assert (
        "| `spark.kubernetes.executor.container.image` | falls back to `spark.kubernetes.container.image` |"
        in table
    )
    assert "| `spark.kubernetes.container.image.pullSecrets` | empty |" in table
    assert "| `spark.kubernetes.executor.podTemplateFile` | — |" in table


def test_pipes_in_text_are_escaped() -> None:
    assert "`spark.executor.resource.<name>.<amount\\|vendor\\|discoveryScript>`" in docs.render()


def test_cli_writes_between_markers_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "configuration.md"
    target.write_text(f"# Title\n\n{docs.START_MARKER}\nold\n{docs.END_MARKER}\n\ntail\n", encoding="utf-8")
    assert docs.main(["--check", str(target)]) == 1
    assert "stale" in capsys.readouterr().err
    assert docs.main(["--write", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert text.startswith(f"# Title\n\n{docs.START_MARKER}\n{docs.render()}\n{docs.END_MARKER}")
    assert text.endswith("\n\ntail\n")
    assert docs.main(["--check", str(target)]) == 0
    assert docs.main([]) == 0
    assert capsys.readouterr().out == docs.render() + "\n"


def test_markers_are_required() -> None:
    with pytest.raises(ValueError, match="needs <!-- conf-table:start -->"):
        docs.replace_between_markers("no markers", "table")
