"""The package map in docs/architecture.md names every folder, and every folder says its job."""

from __future__ import annotations

import ast
import re

import pytest
from repo import REPO_ROOT

PACKAGE = REPO_ROOT / "k8s_backend"
ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"
PUBLIC_FACE = {"__init__.py", "__main__.py", "errors.py", "_moved.py", "py.typed"}


def packages() -> list[str]:
    top = [p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    cli = [f"cli/{p.name}" for p in (PACKAGE / "cli").iterdir() if (p / "__init__.py").is_file()]
    return sorted(top + cli)


def test_the_root_holds_only_the_public_face() -> None:
    loose = {p.name for p in PACKAGE.iterdir() if p.is_file()}
    assert loose <= PUBLIC_FACE, f"modules at the package root: {sorted(loose - PUBLIC_FACE)}"


@pytest.mark.parametrize("package", packages())
def test_each_package_is_in_the_map_with_a_docstring(package: str) -> None:
    rows = re.findall(r"^\| `([a-z_/]+)/` \|", ARCHITECTURE.read_text(encoding="utf-8"), re.M)
    assert package in rows, f"docs/architecture.md has no row for {package}/"
    docstring = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and len(docstring.split()) > 5, f"{package}/__init__.py does not say its job"
