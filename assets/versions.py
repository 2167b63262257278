"""Code versions for the assets: a digest of the source an asset module runs, so the UI marks an asset
stale when that code changed since its last materialization (and unchanged code leaves it fresh).

The source is the asset module itself and every `plbench` module it imports, followed transitively
(imports inside functions included, since the library imports lazily), with the data files the library
reads as rules (`plbench/quality_suites/*.json`) and the source catalog (`raw_sources/catalog.json`).
Hand-kept version strings would drift; this cannot.

The build's configuration is part of what an asset runs, so it joins the code version too
(`config_digest`): every setting but where the release goes and what it is called joins every
asset's version, those join the versions of the assets that write or name the release only.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from plbench.content_digest import content_digest
from plbench.raw_sources.catalog import CATALOG_PATH

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = "plbench"


@functools.cache  # asked for every import of every file in a closure: 13,000 times a definitions load
def _file_of(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _statements(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included (an import is a statement: no expression holds one)."""
    for node in nodes:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
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


def code_version(*modules: str) -> str:
    """sha256 (first 16 hex digits) of the modules' source closure and the library's rule data."""
    rules = [*sorted((ROOT / LIBRARY / "quality_suites").glob("*.json")), CATALOG_PATH]
    closure = sorted({path for module in modules for path in source_files(module)})
    digest = hashlib.sha256()
    for path in (*closure, *rules):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def content_versioned(compute):
    """Under `@dg.asset`: the value goes out with its content digest as its data version, so a rerun
    that produces the same content leaves what depends on it fresh (pipelines/freshness.py)."""

    @functools.wraps(compute)
    def versioned(*args, **kwargs):
        value = compute(*args, **kwargs)
        with warnings.catch_warnings():  # data versions on outputs are marked beta
            warnings.simplefilter("ignore", dg.BetaWarning)
            return dg.Output(value, data_version=dg.DataVersion(content_digest(value)))

    signature = inspect.signature(compute)
    versioned.__signature__ = signature.replace(return_annotation=dg.Output[signature.return_annotation])
    return versioned


# Settings that only place or name the release: they concern the release stages alone.
RELEASE_SETTINGS = ("version", "out_dir", "validation_dir")


def config_digest(config, names_release: bool) -> str:
    """The settings an asset depends on, as a digest (keys and secrets never shown): every one for an asset
    that names or places the release (pipelines.stages.NAMES_THE_RELEASE), all but RELEASE_SETTINGS for the
    others."""
    settings = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    if not names_release:
        settings = {k: v for k, v in settings.items() if k not in RELEASE_SETTINGS}
    return content_digest(settings)[:16]
