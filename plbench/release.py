"""Release assembly: every subset's part (plbench.subsets) into tables, manifest and card, written atomically.

A release folder `<out>/<version>/` holds `tasks.parquet` (its rows also split per subset
under `subsets/`), `rejections.parquet`,
`types.parquet`, the subsets' own tables (databases, gold queries), `manifest.json` and
`README.md`. It is written to a temporary sibling folder and renamed into place, so a
failed build leaves nothing behind; an existing version is never overwritten. Parquet
files carry no timestamps and rows are sorted, so the same code, inputs and configuration give
byte-identical files: a build that makes the very tables an existing version holds leaves it as it is.
"""

from __future__ import annotations

import filecmp
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench import __version__
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.dialects.oracle_syntax import gate_release_parts
from plbench.file_cells import cells_table, row_groups
from plbench.records import Rejection
from plbench.release_card import dataset_card
from plbench.release_diff import diff_rows, digested, read_digested
from plbench.release_loading import subset_tables
from plbench.release_report import report_plots
from plbench.subsets import SUBSETS
from plbench.subsets.base import SubsetRelease
from plbench.taskrow import (
    TASK_SCHEMA,
    TYPE_SCHEMA,
    TaskRow,
    arrow_schema,
    as_record,
    by_dialect,
    task_records,
    type_rows,
)

REJECTION_COLUMNS = ("subset", "source_id", "dialect", "level", "stage", "reason_code", "detail")
REJECTION_SCHEMA = arrow_schema(Rejection, REJECTION_COLUMNS)
TEXT_BYTES_PER_ROW_GROUP = 64 * 2**20  # text a table's writer holds at once (see _write_table)
CONTENT_FIELDS = ("prompt", "signature", "setup_sql", "scaffold", "test_block", "test_cases")  # the diff's "changed"


class ReleaseExists(FileExistsError):
    pass


PACKAGE = Path(__file__).resolve().parent


@functools.cache
def builder_code() -> str:
    """The builder's code as a digest (`package_digest` of plbench), part of the build id: a fixed build makes
    another build id, so its release gets a version of its own instead of colliding with the old code's."""
    return package_digest(PACKAGE)


def package_digest(package: Path) -> str:
    """sha256 (first 16 hex digits) of every file of a package, its modules and the rule tables they read
    (hidden files and bytecode aside)."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if path.is_file() and "__pycache__" not in relative.parts and not relative.name.startswith("."):
            digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_id(config: BuildConfig, inputs: dict[str, str], oracle_grammar: str | None) -> str:
    """A content id of everything that shapes the release: builder (version and code), configuration, raw
    checksums, and the Oracle grammar's parser when its gate ran (None: its packages are not installed, and
    rows it would reject are released)."""
    shaped_by = {
        "builder": __version__,
        "code": builder_code(),
        "config": config.fingerprint(),
        "inputs": inputs,
        "oracle_grammar": oracle_grammar,
    }
    return hashlib.sha256(json.dumps(shaped_by, sort_keys=True).encode()).hexdigest()[:16]


def release_version(config: BuildConfig, build: str) -> str:
    return config.version or f"{__version__}-{build[:8]}"


def rejection_rows(rejections: list[Rejection]) -> list[dict]:
    rows = [as_record(r) for r in rejections]
    return sorted(rows, key=lambda r: tuple(str(r[c]) for c in REJECTION_COLUMNS))


def _reasons(rejections: list[Rejection]) -> dict[str, int]:
    return dict(sorted(Counter(r.reason_code for r in rejections).items()))


def subset_counts(subset: str, input_count: int, rows: list[TaskRow], rejections: list[Rejection]) -> dict:
    """Released and rejected counts of one subset; `reconciles` checks input = released + rejected per dialect."""
    mine = [r for r in rejections if r.subset == subset]
    tasks = by_dialect(r for r in mine if r.level == "task")
    cases = by_dialect(r for r in mine if r.level == "case")
    released_rows = by_dialect(r for r in rows if r.subset == subset)
    shared = len(tasks[None])
    released, rejected, reconciles = {}, {}, {}
    for name in DIALECT_NAMES:
        released[name] = len(released_rows[name])
        rejected[name] = _reasons(tasks[name])
        rejected_ids = {r.source_id for r in tasks[None] + tasks[name]}
        count = shared + len(tasks[name])
        reconciles[name] = input_count == released[name] + count and len(rejected_ids) == count
    return {
        "input": input_count,
        "released": released,
        "rejected": _reasons(tasks[None]),
        "rejected_by_dialect": rejected,
        "cases_dropped": _reasons(cases[None]),
        "cases_dropped_by_dialect": {name: _reasons(cases[name]) for name in DIALECT_NAMES},
        "reconciles": reconciles,
    }


def diff_against_previous(out_dir: Path, rows: list[TaskRow]) -> dict | None:
    """Tasks added, removed and changed since the newest release already in out_dir."""
    previous = sorted(
        (p for p in out_dir.glob("*/tasks.parquet") if not p.parent.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
    )
    if not previous:
        return None
    new = digested((as_record(r) for r in rows), CONTENT_FIELDS)
    diff = diff_rows(read_digested(previous[-1], CONTENT_FIELDS), new, CONTENT_FIELDS)
    return {
        "against": previous[-1].parent.name,
        "added": len(diff.added),
        "removed": len(diff.removed),
        "changed": len(diff.changed),
    }


def _write_table(rows: list[dict], schema: pa.Schema, path: Path) -> str:
    """One row group per run of rows holding TEXT_BYTES_PER_ROW_GROUP of text, file cells read: over the
    mirror databases.parquet's decisions are 415 MB and tasks.parquet's columns more, and each table made
    one Arrow table at once (and again to combine its chunks) set the build's peak memory."""
    path.parent.mkdir(exist_ok=True)
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for group in row_groups(rows, TEXT_BYTES_PER_ROW_GROUP):
            writer.write_table(cells_table(group, schema).combine_chunks())  # a cell a chunk writes other pages
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_file(data: bytes, path: Path) -> str:
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def write_release(
    config: BuildConfig,
    version: str,
    tables: dict[str, tuple[list[dict], pa.Schema]],
    manifest: dict,
    card: str,
    files: dict[str, bytes] | None = None,
) -> Path:
    """Write the release atomically (with `files`, path -> bytes, listed in the manifest's `report`). An
    existing version is never overwritten: one holding these very tables is left as it is (a rerun of
    unchanged code), one holding others is refused (ReleaseExists)."""
    final = config.out_dir / version
    config.out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=config.out_dir))
    try:
        manifest["tables"] = {
            name: _write_table(rows, schema, staging / name) for name, (rows, schema) in sorted(tables.items())
        }
        manifest["report"] = {name: _write_file(data, staging / name) for name, data in sorted((files or {}).items())}
        manifest["built_at"] = datetime.now(UTC).replace(microsecond=0).isoformat()
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (staging / "README.md").write_text(card)
        os.chmod(staging, 0o755)
        if final.exists():
            _refuse_other_tables(final, staging, manifest["tables"])
            shutil.rmtree(staging)
            return final
        os.rename(staging, final)  # atomic on one filesystem; fails if `final` appeared meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _refuse_other_tables(existing: Path, made: Path, tables: dict[str, str]) -> None:
    """ReleaseExists unless `existing` holds exactly the tables written to `made` (compared byte for byte,
    so a file changed on disk after its manifest was written counts as other)."""
    held = {p.relative_to(existing).as_posix() for p in existing.rglob("*.parquet")}
    other = sorted(
        (held ^ set(tables)) | {n for n in held & set(tables) if not filecmp.cmp(existing / n, made / n, False)}
    )
    if other:
        raise ReleaseExists(
            f"release {existing} already exists with other tables ({', '.join(other)}): a version is never "
            "overwritten (pass --version for a new one, or remove the folder)"
        )


def build_manifest(
    config: BuildConfig, build: str, parts: list[SubsetRelease], rows: list[TaskRow], types: list[dict]
) -> dict:
    """Counts per subset (reconciled), each subset's validation and own sections, inputs and types; the
    version and the diff against the previous release are `publish`'s."""
    rejections = [r for p in parts for r in p.rejections]
    manifest = {
        "builder_version": __version__,
        "builder_code": builder_code(),
        "build_id": build,
        "configuration": config.fingerprint(),
        "inputs": release_inputs(parts),
        "subsets": {p.subset: subset_counts(p.subset, p.input_count, rows, rejections) for p in parts},
        "validation": {p.subset: p.validation for p in parts},
        "types": dict(sorted(Counter(t["dialect"] for t in types).items())),
    }
    for part in parts:
        own = SUBSETS.get(part.subset)  # a part of an unregistered subset keeps the sections it made
        for key, section in (own.released_manifest(part) if own else part.manifest).items():
            manifest.setdefault(key, {}).update(section)
    return manifest


def release_inputs(parts: list[SubsetRelease]) -> dict[str, str]:
    return dict(sorted((rel, sha) for p in parts for rel, sha in p.inputs.items()))


def _subset_tables(parts: list[SubsetRelease]) -> dict[str, tuple[list[dict], pa.Schema]]:
    """The subsets' own tables, each the concatenation of every part holding it."""
    tables: dict[str, tuple[list[dict], pa.Schema]] = {}
    for part in parts:
        for name, (rows, schema) in part.tables.items():
            held, held_schema = tables.setdefault(name, ([], schema))
            if held_schema != schema:
                raise ValueError(f"{part.subset}: table {name} has another schema than the other subsets give it")
            held.extend(rows)
    return tables


@dataclass
class PreparedRelease:
    """A release in memory: what `write_release` writes, checked before anything is written. It holds no
    version: the settings that name and place a release concern `publish` alone, so a build under another
    --version reuses a prepared release rather than grading and checking every task again."""

    tasks: list[TaskRow]
    other_tables: dict[str, tuple[list[dict], pa.Schema]]  # every table but tasks.parquet
    manifest: dict

    @property
    def tables(self) -> dict[str, tuple[list[dict], pa.Schema]]:
        """Every release table as Arrow rows and schema, tasks.parquet derived from the typed rows."""
        return {"tasks.parquet": (task_records(self.tasks), TASK_SCHEMA), **self.other_tables}

    def version(self, config: BuildConfig) -> str:
        return release_version(config, self.manifest["build_id"])


def prepare_release(config: BuildConfig, parts: list[SubsetRelease | None]) -> PreparedRelease:
    """Rows, rejections, types and manifest from every selected subset's part (None: not selected);
    refuses counts that do not reconcile."""
    parts = [p for p in parts if p is not None]
    names = [p.subset for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"a subset gave two parts: {sorted(names)}")
    parts, syntax = gate_release_parts(parts, config.workers, config.cache_dir / "oracle-grammar")
    build = build_id(config, release_inputs(parts), syntax["parser"] if syntax["ran"] else None)
    rows = sorted(
        (r.with_(build_id=build) for p in parts for r in p.rows), key=lambda r: (r.subset, r.task_id, r.dialect)
    )
    types = type_rows(usage for p in parts for usage in p.types)
    manifest = build_manifest(config, build, parts, rows, types)
    manifest["oracle_syntax"] = syntax
    broken = {s: c["reconciles"] for s, c in manifest["subsets"].items() if not all(c["reconciles"].values())}
    if broken:
        raise AssertionError(f"counts do not reconcile (input != released + rejected): {broken}")
    tables = {
        "rejections.parquet": (rejection_rows([r for p in parts for r in p.rejections]), REJECTION_SCHEMA),
        "types.parquet": (types, TYPE_SCHEMA),
        **_subset_tables(parts),
    }
    return PreparedRelease(rows, tables, manifest)


def publish(config: BuildConfig, prepared: PreparedRelease, timings: dict[str, float] | None = None) -> Path:
    """Write a prepared release (tables, manifest with its version and the diff against the newest release
    in config.out_dir, dataset card, the report's plots drawn with the stage `timings`) atomically there."""
    version = prepared.version(config)
    diff = diff_against_previous(config.out_dir, prepared.tasks) if config.out_dir.exists() else None
    manifest = {**prepared.manifest, "version": version, "diff": diff}
    tables = prepared.tables
    tables.update(subset_tables(tables["tasks.parquet"][0]))  # derived from checked rows: no suite of their own
    rejections = tables["rejections.parquet"][0] if "rejections.parquet" in tables else []
    plots = report_plots(tables["tasks.parquet"][0], rejections, manifest, timings or {})
    return write_release(config, version, tables, manifest, dataset_card(manifest), plots)


def apply_crosscheck(prepared: PreparedRelease, report) -> PreparedRelease:
    """Each task row's crosscheck status, and the manifest's `crosscheck` section, from the stage's
    report (plbench.validation.crosscheck.CrosscheckReport)."""
    statuses = report.task_statuses() if report.ran else {}
    unchecked = ("not_run", report.reason if not report.ran else "no candidate was checked for this task")
    updated = []
    for row in prepared.tasks:
        status, detail = statuses.get(row.key, unchecked)
        updated.append(row.with_(crosscheck_status=status, crosscheck_detail=detail))
    manifest = dict(prepared.manifest, crosscheck=report.manifest_entry())
    return PreparedRelease(updated, prepared.other_tables, manifest)
