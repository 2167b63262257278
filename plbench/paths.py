"""Where the checkout's folders are: the catalog, caches, generated files and releases live below its root."""

from __future__ import annotations

from pathlib import Path


def project_root() -> Path:
    """The checkout's root (where pyproject.toml is)."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").exists() else Path.cwd()
