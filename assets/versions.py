"""Code versions for the assets: a digest of the source an asset module runs, so the UI marks an asset
stale when that code changed since its last materialization (and unchanged code leaves it fresh).

The source is the asset module itself and every `plbench` module it imports, followed transitively
(imports inside functions included, since the library imports lazily), with the data files the library
reads as rules (`plbench/quality_suites/*.json`). Hand-kept version strings would drift; this cannot.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = "plbench"


def _file_of(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[str]:
    """The `plbench` modules a file names in its imports (`from plbench.x import y` may name module x.y)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {n for n in names if n == LIBRARY or n.startswith(LIBRARY + ".")}


@cache
def source_files(module: str) -> tuple[Path, ...]:
    """The module's file and every library file it reaches through imports, sorted."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        path = _file_of(todo.pop())
        if path is None or path in seen:
            continue
        seen.add(path)
        todo += sorted(_imports(path))
    return tuple(sorted(seen))


def code_version(*modules: str) -> str:
    """sha256 (first 16 hex digits) of the modules' source closure and the library's rule data."""
    rules = sorted((ROOT / LIBRARY / "quality_suites").glob("*.json"))
    closure = sorted({path for module in modules for path in source_files(module)})
    digest = hashlib.sha256()
    for path in (*closure, *rules):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
