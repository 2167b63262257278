"""Code versions for the assets: a digest of the source an asset module runs, so the UI marks an asset
stale when that code changed since its last materialization (and unchanged code leaves it fresh).

The source is the asset module itself and every `plbench` module it imports, followed transitively
(imports inside functions included, since the library imports lazily), with the data files the library
reads as rules (`plbench/quality_suites/*.json`) and the source catalog (`raw_sources/catalog.json`).
Hand-kept version strings would drift; this cannot.

The build's configuration is part of what an asset runs, so it joins the code version too
(`config_digest`), but for what cannot change its value: settings that only say how a run executes
(EXECUTION_SETTINGS), where the release goes and what it is called (RELEASE_SETTINGS, but for the assets
that write or name the release), and of the subset selection, what the asset's value can follow: the
subsets it feeds that its own code, or an upstream asset's, asks about (`reads_selection`, `selected_subsets`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings

import dagster as dg

from plbench.code_closure import LIBRARY, ROOT, closure, files_digest
from plbench.content_digest import content_digest
from plbench.raw_sources.catalog import CATALOG_PATH


def code_version(*modules: str) -> str:
    """sha256 (first 16 hex digits) of the modules' source closure and the library's rule data."""
    rules = [*sorted((ROOT / LIBRARY / "quality_suites").glob("*.json")), CATALOG_PATH]
    return files_digest([*closure(*modules), *rules])


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
# Settings that say how a run executes, not what it makes (the same release comes out under any of them: the
# celery test compares it byte for byte), so `--workers 4` or a celery run reuses what an in-process build stored.
EXECUTION_SETTINGS = ("workers", "procedure_workers", "executor", "steps_at_once", "celery_broker", "task_shards")


def config_digest(config, names_release: bool, subsets: frozenset[str]) -> str:
    """The settings an asset depends on, as a digest (keys and secrets never shown): all but
    EXECUTION_SETTINGS, and RELEASE_SETTINGS unless the asset names or places the release
    (pipelines.stages.NAMES_THE_RELEASE). Of the selected subsets, only those in `subsets`, the ones
    the asset's value can follow (pipelines/definitions.subsets_digested): selecting MBPP+ leaves Spider's
    stages as they were."""
    left_out = EXECUTION_SETTINGS + (() if names_release else RELEASE_SETTINGS)
    settings = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in left_out}
    settings["subsets"] = tuple(name for name in config.subsets if name in subsets)
    return content_digest(settings)[:16]


# Asset metadata naming the subsets whose selection the asset's code asks about (`selected_subsets`).
READS_SELECTION = "reads_selection"


def reads_selection(*subsets: str) -> dict[str, list[str]]:
    """The metadata declaring that an asset's code asks whether `subsets` are selected: its code version,
    and that of what it feeds, digests their selection (pipelines/definitions.subsets_digested)."""
    return {READS_SELECTION: sorted(subsets)}


def selected_subsets(context, build) -> set[str]:
    """Which of the subsets the asset declares (`reads_selection`) the build selects: the only selection its
    code may read, since no other is in its code version and its value would not follow it."""
    return set(context.assets_def.metadata_by_key[context.asset_key].get(READS_SELECTION, [])) & set(build.subsets)
