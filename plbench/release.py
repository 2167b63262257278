"""Release assembly: task rows, rejections, manifest, dataset card, written atomically.

A release folder `<out>/<version>/` holds `tasks.parquet`, `rejections.parquet`,
`types.parquet`, `manifest.json` and `README.md`. It is written to a temporary
sibling folder and renamed into place, so a failed build leaves nothing behind;
an existing version is never overwritten. Parquet files carry no timestamps and
rows are sorted, so the same inputs and configuration give byte-identical files.
"""

from __future__ import annotations

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
from plbench.mbpp.artifacts import TypedTask
from plbench.mbpp.stages import ReplayReport, RoundTripReport, collect_types
from plbench.records import Rejection, task_id
from plbench.release_diff import diff_rows
from plbench.taskrow import TASK_SCHEMA, TaskRow, arrow_schema, as_record, task_records

SOURCE_DATASETS = {
    "mbpp": "google-research/mbpp",
    "mbpp_plus": "evalplus/mbppplus v0.1.0",
    "spider_plsql": "Spider 1.0 (dev)",
    "spider2": "xlang-ai/Spider2 (Spider 2.0-Lite)",
}
LICENCES = {"mbpp": "CC-BY-4.0", "mbpp_plus": "Apache-2.0", "spider_plsql": "CC-BY-SA-4.0", "spider2": "MIT"}

REJECTION_COLUMNS = ("subset", "source_id", "dialect", "level", "stage", "reason_code", "detail")
REJECTION_SCHEMA = arrow_schema(Rejection, REJECTION_COLUMNS)
TYPE_SCHEMA = pa.schema([("dialect", pa.string()), ("name", pa.string()), ("ddl", pa.string()), ("tasks", pa.int32())])


CONTENT_FIELDS = ("prompt", "signature", "setup_sql", "scaffold", "test_block", "test_cases")  # the diff's "changed"


class ReleaseExists(FileExistsError):
    pass


def build_id(config: BuildConfig, inputs: dict[str, str]) -> str:
    """A content id of everything that shapes the release: builder, configuration, raw checksums."""
    blob = json.dumps({"builder": __version__, "config": config.fingerprint(), "inputs": inputs}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def release_version(config: BuildConfig, build: str) -> str:
    return config.version or f"{__version__}-{build[:8]}"


def plsql_constructs(task: TypedTask) -> list[str]:
    """The PL/SQL constructs the task's signature makes a solution use."""
    kinds = {x.kind for t in task.signature.all_types() for x in t.walk()}
    found = {"function"}
    if kinds & {"list", "tuple_seq", "set", "dict"}:
        found.add("collection_type")
    if kinds & {"record", "dict", "variant"}:
        found.add("object_type")
    return sorted(found)


def task_rows(
    artifacts: list, replays: dict, reference_code: dict, raw_sha: dict[str, str], build: str
) -> tuple[list[TaskRow], list[Rejection]]:
    """One row per released task and dialect, and a rejection for each task a dialect does not release.

    A dialect whose replay did not run (no server) releases a task only when the PostgreSQL
    replay of the same cases passed, and its row says `not_run` with the reason.
    """
    results = {d: {r.task_id: r for r in report.results} for d, report in replays.items()}
    rows, rejections = [], []
    for art in artifacts:
        task, report = art.task, replays[art.dialect]
        status, detail, engine, mutants = _replay_fields(art, report, results)
        if status not in ("passed", "not_run"):
            rejections.append(
                Rejection(
                    task.subset,
                    task.source_id,
                    "replay_validation",
                    "harness_too_weak" if status == "harness_too_weak" else status,
                    detail,
                    dialect=art.dialect,
                )
            )
            continue
        rows.append(_row(task, art, status, detail, engine, mutants, reference_code, raw_sha, build))
    return rows, rejections


def _replay_fields(art, report, results) -> tuple[str, str, str | None, tuple[int, int] | None]:
    if report.ran:
        r = results[art.dialect][art.task_id]
        return r.status, r.detail, report.engine, (r.mutants_total, r.mutants_killed)
    pg = results.get("postgres", {}).get(art.task_id)
    if pg is None or pg.status != "passed":
        return (
            "not_validated",
            (f"{report.reason}; and the PostgreSQL replay of the same cases did not pass"),
            None,
            None,
        )
    return "not_run", report.reason, None, None


def _row(task: TypedTask, art, status, detail, engine, mutants, reference_code, raw_sha, build) -> TaskRow:
    comparison = {"atol": task.comparison.atol, "rtol": task.comparison.rtol, "unordered": task.comparison.unordered}
    return TaskRow(
        task_id=task.task_id,
        subset=task.subset,
        dialect=art.dialect,
        source_dataset=SOURCE_DATASETS[task.subset],
        source_id=task.source_id,
        prompt=art.prompt,
        entry_point=task.entry_point,
        signature=art.signature,
        setup_sql=art.setup_sql,
        scaffold=art.scaffold,
        python_reference=reference_code[(task.subset, task.source_id)],
        test_block=art.test_block,
        test_cases=art.test_cases,
        comparison=json.dumps(comparison, sort_keys=True),
        plsql_constructs=tuple(plsql_constructs(task)),
        replay_status=status,
        replay_engine=engine,
        replay_detail=detail or None,
        mutants_total=mutants[0] if mutants else None,
        mutants_killed=mutants[1] if mutants else None,
        crosscheck_detail="the crosscheck stage is not part of this build",
        notes=tuple(task.notes),
        raw_sha256=raw_sha[task.subset],
        build_id=build,
    )


def rejection_rows(rejections: list[Rejection]) -> list[dict]:
    rows = [as_record(r) for r in rejections]
    return sorted(rows, key=lambda r: tuple(str(r[c]) for c in REJECTION_COLUMNS))


def subset_counts(subset: str, input_count: int, rows: list[TaskRow], rejections: list[Rejection]) -> dict:
    """Released and rejected counts of one subset; `reconciles` checks input = released + rejected per dialect."""
    task_level = [r for r in rejections if r.subset == subset and r.level == "task"]
    shared = Counter(r.reason_code for r in task_level if r.dialect is None)
    released, by_dialect, reconciles = {}, {}, {}
    for dialect in DIALECT_NAMES:
        released[dialect] = sum(1 for r in rows if r.subset == subset and r.dialect == dialect)
        by_dialect[dialect] = dict(sorted(Counter(r.reason_code for r in task_level if r.dialect == dialect).items()))
        rejected_ids = {r.source_id for r in task_level if r.dialect in (None, dialect)}
        reconciles[dialect] = input_count == released[dialect] + sum(shared.values()) + sum(
            by_dialect[dialect].values()
        ) and len(rejected_ids) == sum(shared.values()) + sum(by_dialect[dialect].values())
    case_level = [r for r in rejections if r.subset == subset and r.level == "case"]
    cases_dropped = Counter(r.reason_code for r in case_level if r.dialect is None)
    cases_by_dialect = {
        d: dict(sorted(Counter(r.reason_code for r in case_level if r.dialect == d).items())) for d in DIALECT_NAMES
    }
    return {
        "input": input_count,
        "released": released,
        "rejected": dict(sorted(shared.items())),
        "rejected_by_dialect": by_dialect,
        "cases_dropped": dict(sorted(cases_dropped.items())),
        "cases_dropped_by_dialect": cases_by_dialect,
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
    diff = diff_rows(pq.read_table(previous[-1]).to_pylist(), task_records(rows), CONTENT_FIELDS)
    return {
        "against": previous[-1].parent.name,
        "added": len(diff.added),
        "removed": len(diff.removed),
        "changed": len(diff.changed),
    }


def _write_table(rows: list[dict], schema: pa.Schema, path: Path) -> str:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, compression="zstd")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_release(
    config: BuildConfig, version: str, tables: dict[str, tuple[list[dict], pa.Schema]], manifest: dict, card: str
) -> Path:
    """Write the release atomically; refuses to overwrite an existing version."""
    final = config.out_dir / version
    if final.exists():
        raise ReleaseExists(
            f"release {final} already exists: a version is never overwritten "
            "(pass --version for a new one, or remove the folder)"
        )
    config.out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=config.out_dir))
    try:
        manifest["tables"] = {
            name: _write_table(rows, schema, staging / name) for name, (rows, schema) in sorted(tables.items())
        }
        manifest["built_at"] = datetime.now(UTC).replace(microsecond=0).isoformat()
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (staging / "README.md").write_text(card)
        os.chmod(staging, 0o755)
        os.rename(staging, final)  # atomic on one filesystem; fails if `final` appeared meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def build_manifest(
    config: BuildConfig,
    version: str,
    build: str,
    ingested: list,
    rows: list[dict],
    rejections: list[Rejection],
    replays: dict,
    roundtrips: dict,
    types: list[dict],
) -> dict:
    inputs = {rel: sha for subset in ingested for rel, sha in subset.inputs.items()}
    subsets, validation = {}, {}
    for subset in ingested:
        subsets[subset.subset] = subset_counts(subset.subset, subset.input_count, rows, rejections)
        ids = {task_id(subset.subset, p.source_id) for p in subset.problems}
        validation[subset.subset] = {d: _validation_entry(replays[d], roundtrips[d], ids) for d in sorted(replays)}
    return {
        "version": version,
        "builder_version": __version__,
        "build_id": build,
        "configuration": config.fingerprint(),
        "inputs": dict(sorted(inputs.items())),
        "subsets": subsets,
        "validation": validation,
        "types": dict(sorted(Counter(t["dialect"] for t in types).items())),
    }


def _validation_entry(replay: ReplayReport, roundtrip: RoundTripReport, task_ids: set[str]) -> dict:
    """Replay, mutant and round-trip counts of one dialect restricted to one subset's tasks."""
    entry = {"replay": replay.counts(task_ids), "roundtrip": roundtrip.counts(task_ids)}
    if replay.ran:
        entry["mutants"] = replay.mutant_counts(task_ids)
    return entry


def dataset_card(manifest: dict) -> str:
    """README.md of a release, with YAML front matter that common dataset loaders read."""
    subsets = manifest["subsets"]
    licences = sorted({LICENCES[s] for s in subsets})
    lines = [
        "---",
        f"pretty_name: plbench {manifest['version']}",
        "license: other",
        f'license_details: "{"; ".join(f"{s}: {LICENCES[s]}" for s in subsets)}"',
        "task_categories:",
        "- text-generation",
        "tags:",
        "- code",
        "- plsql",
        "- postgresql",
        "- oracle",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: test",
        "    path: tasks.parquet",
        "---",
        "",
        f"# plbench release {manifest['version']}",
        "",
        "Executable PL/SQL (Oracle) and PL/pgSQL (PostgreSQL) function-writing tasks converted from "
        f"{', '.join(SOURCE_DATASETS[s] for s in subsets)} by rule: test cases extracted from the Python "
        "tests (MBPP asserts; MBPP+ inputs with outputs from the sandboxed reference solution), one "
        "signature inferred per task, collection and object types emitted once per element type, and one "
        "test block per task that prints a verdict per case.",
        "",
        "## Counts",
        "",
        "| subset | input | released (oracle) | released (postgres) | rejected, shared reasons |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, c in subsets.items():
        lines.append(
            f"| {name} | {c['input']} | {c['released']['oracle']} | {c['released']['postgres']} | "
            f"{sum(c['rejected'].values())} |"
        )
    lines += [
        "",
        "## Validation",
        "",
        "Every released row was replay-validated: a function that maps each test input to its "
        "expected output passes the task's test block, and three mutants of it (NULL results, "
        "another case's output, a reordered or perturbed result) each fail it. "
        "`replay_status` says where this ran; `not_run` means no server of that dialect was "
        "configured, and the row rests on the PostgreSQL replay of the same cases.",
        "",
    ]
    for name, per_dialect in manifest["validation"].items():
        for dialect, entry in per_dialect.items():
            replay = entry["replay"]
            if replay["ran"]:
                mutants = entry.get("mutants")
                lines.append(
                    f"- {name} / {dialect}: replay ran on {replay['engine']}: {replay['passed']} "
                    f"passed, {replay['failed']} failed"
                    + (f"; mutants killed {mutants['killed']} of {mutants['total']}." if mutants else ".")
                )
            else:
                lines.append(f"- {name} / {dialect}: replay not run ({replay['reason']}).")
            trip = entry.get("roundtrip", {})
            if trip.get("ran"):
                lines.append(f"  Value round trip: {trip['equal']} of {trip['values']} test values came back equal.")
    lines += [
        "",
        "## Files",
        "",
        "- `tasks.parquet`: one row per task and dialect (prompt, scaffold, setup_sql, test_block, "
        "test_cases as tagged JSON, validation results, provenance).",
        "- `rejections.parquet`: every input not released (level `task`) and every test case dropped "
        "(level `case`), with stage, reason_code and detail.",
        "- `types.parquet`: each collection/object type once per dialect, with its DDL.",
        "- `manifest.json`: raw input checksums, counts, validation, table checksums.",
        "",
        "## Licences",
        "",
        *[f"- {s}: {LICENCES[s]}" for s in subsets],
        "",
        f"Derived data keeps the source licences ({', '.join(licences)}).",
        "",
    ]
    return "\n".join(lines)


def _extra_subsets(
    manifest: dict, extra_inputs: list, extra_tasks: list, rows: list[dict], rejections: list[Rejection]
) -> None:
    """Counts and validation of the subsets built outside the MBPP stages (Spider), in place."""
    for inputs in extra_inputs:
        manifest["inputs"].update(inputs.inputs)
        manifest["subsets"][inputs.subset] = subset_counts(inputs.subset, inputs.input_count, rows, rejections)
        tasks = next((t for t in extra_tasks if t.subset == inputs.subset), None)
        validation = tasks.validation if tasks else {}
        manifest["validation"][inputs.subset] = {
            d: {"replay": validation.get(d, {"ran": False, "reason": "no task stage ran"})} for d in DIALECT_NAMES
        }


@dataclass
class PreparedRelease:
    """A release in memory: what `write_release` writes, checked before anything is written."""

    version: str
    tasks: list[TaskRow]
    other_tables: dict[str, tuple[list[dict], pa.Schema]]  # every table but tasks.parquet
    manifest: dict

    @property
    def tables(self) -> dict[str, tuple[list[dict], pa.Schema]]:
        """Every release table as Arrow rows and schema, tasks.parquet derived from the typed rows."""
        return {"tasks.parquet": (task_records(self.tasks), TASK_SCHEMA), **self.other_tables}


def prepare_release(
    config: BuildConfig,
    ingested: list,
    stages: list,
    artifacts: list,
    replays: dict,
    roundtrips: dict,
    extra_inputs: list = (),
    extra_tasks: list = (),
    normalization=None,
) -> PreparedRelease:
    """Rows, rejections and manifest from the stage outputs; refuses counts that do not reconcile.

    `extra_inputs` / `extra_tasks` are the Spider subsets (plbench.spider.stages.SpiderInputs / SpiderTasks),
    `normalization` their databases (plbench.spider.summary.NormalizationSummary).
    """
    inputs = {rel: sha for subset in ingested for rel, sha in subset.inputs.items()}
    inputs.update({rel: sha for extra in extra_inputs for rel, sha in extra.inputs.items()})
    build = build_id(config, inputs)
    version = release_version(config, build)
    reference = {(p.subset, p.source_id): p.reference_code for subset in ingested for p in subset.problems}
    raw_sha = {subset.subset: next(iter(subset.inputs.values())) for subset in ingested}
    rows, replay_rejections = task_rows(artifacts, replays, reference, raw_sha, build)
    rows += [r.with_(build_id=build) for tasks in extra_tasks for r in tasks.rows]
    rows.sort(key=lambda r: (r.subset, r.task_id, r.dialect))
    rejections = [r for subset in ingested for r in subset.rejections]
    rejections += [r for stage in stages for r in stage.rejections] + replay_rejections
    rejections += [r for extra in extra_inputs for r in extra.rejections]
    rejections += [r for tasks in extra_tasks for r in tasks.rejections]
    released = {r.key for r in rows}
    types = collect_types([a for a in artifacts if (a.task_id, a.dialect) in released])
    manifest = build_manifest(config, version, build, ingested, rows, rejections, replays, roundtrips, types)
    _extra_subsets(manifest, list(extra_inputs), list(extra_tasks), rows, rejections)
    manifest["inputs"] = dict(sorted(manifest["inputs"].items()))
    if normalization is not None and normalization.manifest:
        manifest["normalization"] = normalization.manifest
    manifest["diff"] = diff_against_previous(config.out_dir, rows) if config.out_dir.exists() else None
    broken = {s: c["reconciles"] for s, c in manifest["subsets"].items() if not all(c["reconciles"].values())}
    if broken:
        raise AssertionError(f"counts do not reconcile (input != released + rejected): {broken}")
    tables = {
        "rejections.parquet": (rejection_rows(rejections), REJECTION_SCHEMA),
        "types.parquet": (types, TYPE_SCHEMA),
    }
    if normalization is not None and normalization.database_rows:
        from plbench.spider.summary import DATABASE_SCHEMA, GOLD_SCHEMA

        tables["databases.parquet"] = (normalization.database_rows, DATABASE_SCHEMA)
        if normalization.gold_rows:
            tables["gold_queries.parquet"] = (normalization.gold_rows, GOLD_SCHEMA)
    return PreparedRelease(version, rows, tables, manifest)


def publish(config: BuildConfig, prepared: PreparedRelease) -> Path:
    """Write a prepared release (tables, manifest, dataset card) atomically under config.out_dir."""
    return write_release(
        config, prepared.version, prepared.tables, dict(prepared.manifest), dataset_card(prepared.manifest)
    )


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
    return PreparedRelease(prepared.version, updated, prepared.other_tables, manifest)
