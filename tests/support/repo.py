"""Where the checkout is, for tests that read its files (README, examples, setup.py)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "setup.cfg").is_file())
