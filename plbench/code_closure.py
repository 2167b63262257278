"""The library source a module runs: the module's file and every `plbench` module it imports, followed
transitively (imports inside functions included, since the library imports lazily; those under `if
TYPE_CHECKING:` left out, since they never run). Its digest names a
version of that code: the assets' code versions (assets/versions.py) and the trivial-candidate verdicts a
gate keeps (plbench.grading.verdict_cache) are both keyed by it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = "plbench"


@functools.cache  # asked for every import of every file in a closure: 13,000 times a definitions load
def _file_of(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _type_checking_only(node: ast.stmt) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): what it imports only names annotations, never runs."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
    return name == "TYPE_CHECKING"


def _statements(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement that may run, nested ones included (an import is a statement: no expression holds
    one), but the body of an `if TYPE_CHECKING:`."""
    for node in nodes:
        yield node
        fields = ("orelse",) if _type_checking_only(node) else ("body", "orelse", "finalbody", "handlers", "cases")
        for field in fields:
            yield from _statements(getattr(node, field, None) or [])


@functools.cache  # each asset module's closure walks the same library files: parse each once
def _imports(path: Path) -> frozenset[str]:
    """The `plbench` modules a file names in its imports (`from plbench.x import y` may name module x.y)."""
    names = set()
    for node in _statements(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return frozenset(n for n in names if n == LIBRARY or n.startswith(LIBRARY + "."))


@functools.cache
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


def closure(*modules: str) -> list[Path]:
    """Every file the modules' source closures hold, sorted."""
    return sorted({path for module in modules for path in source_files(module)})


def files_digest(paths: list[Path]) -> str:
    """sha256 (first 16 hex digits) of each file's path under ROOT and its bytes, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def source_digest(*modules: str) -> str:
    """The digest of the modules' source closure."""
    return files_digest(closure(*modules))
