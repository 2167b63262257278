"""MBPP as a subset: function-writing tasks from the MBPP asserts (plbench.mbpp.stages builds them).

`MbppSubset` serves MBPP and MBPP+ (plbench.subsets.mbpp_plus): the two share every stage and
differ only in their raw files and how test cases are made.
"""

from __future__ import annotations

import json
from typing import Any

from plbench.config import DIALECT_NAMES
from plbench.dialects import DIALECTS
from plbench.mbpp.artifacts import TypedTask
from plbench.mbpp.stages import Ingested, ReplayReport, RoundTripReport, StageOutput, TaskArtifacts, type_usages
from plbench.records import Rejection, task_id
from plbench.subsets.base import Subset, SubsetRelease
from plbench.taskrow import TaskRow

STAGE_ASSETS = ("mbpp_test_cases", "mbpp_signatures", "mbpp_augmented", "mbpp_tasks")  # the last holds the tasks


def plsql_constructs(task: TypedTask, dialect: str) -> tuple[str, ...]:
    """The PL/SQL constructs the task's signature makes a solution use in `dialect` (its types)."""
    return tuple(sorted({"function"} | DIALECTS[dialect].type_constructs(task.signature.all_types())))


def task_rows(
    artifacts: list[TaskArtifacts], replays: dict, reference_code: dict, raw_sha: dict[str, str]
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
                Rejection(task.subset, task.source_id, "replay_validation", status, detail, dialect=art.dialect)
            )
            continue
        rows.append(_row(art, status, detail, engine, mutants, reference_code, raw_sha))
    return rows, rejections


def _replay_fields(art, report, results) -> tuple[str, str, str | None, tuple[int, int] | None]:
    if report.ran:
        r = results[art.dialect][art.task_id]
        return r.status, r.detail, report.engine, (r.mutants_total, r.mutants_killed)
    pg = results.get("postgres", {}).get(art.task_id)
    if pg is None or pg.status != "passed":
        return (
            "not_validated",
            f"{report.reason}; and the PostgreSQL replay of the same cases did not pass",
            None,
            None,
        )
    return "not_run", report.reason, None, None


def _row(art: TaskArtifacts, status, detail, engine, mutants, reference_code, raw_sha) -> TaskRow:
    task = art.task
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
        plsql_constructs=plsql_constructs(task, art.dialect),
        replay_status=status,
        replay_engine=engine,
        replay_detail=detail or None,
        mutants_total=mutants[0] if mutants else None,
        mutants_killed=mutants[1] if mutants else None,
        crosscheck_detail="the crosscheck stage is not part of this build",
        notes=tuple(task.notes),
        raw_sha256=raw_sha[task.subset],
    )


def validation_entry(replay: ReplayReport, roundtrip: RoundTripReport, task_ids: set[str]) -> dict:
    """Replay, mutant and round-trip counts of one dialect restricted to one subset's tasks."""
    entry = {"replay": replay.counts(task_ids), "roundtrip": roundtrip.counts(task_ids)}
    if replay.ran:
        entry["mutants"] = replay.mutant_counts(task_ids)
    return entry


def release_part(
    ingested: Ingested, stages: list[StageOutput], replays: dict[str, ReplayReport], roundtrips: dict
) -> SubsetRelease:
    """The subset's rows, rejections, types and validation from the MBPP stage outputs (which hold
    both MBPP subsets: only this one's are taken)."""
    name = ingested.subset
    artifacts = [a for a in stages[-1].items if a.task.subset == name]
    reference = {(p.subset, p.source_id): p.reference_code for p in ingested.problems}
    raw_sha = {name: next(iter(ingested.inputs.values()))}
    rows, replay_rejections = task_rows(artifacts, replays, reference, raw_sha)
    rejections = list(ingested.rejections) + [r for s in stages for r in s.rejections if r.subset == name]
    released = {r.key for r in rows}
    types = type_usages([a for a in artifacts if (a.task_id, a.dialect) in released])
    ids = {task_id(name, p.source_id) for p in ingested.problems}
    validation = {d: validation_entry(replays[d], roundtrips[d], ids) for d in sorted(replays)}
    return SubsetRelease(
        name, ingested.input_count, ingested.inputs, rows, rejections + replay_rejections, validation, types
    )


class MbppSubset(Subset):
    required_columns = ("entry_point", "signature", "setup_sql", "test_block", "python_reference", "raw_sha256")

    def __init__(self, name: str, source_dataset: str, licence: str, summary: str):
        self.name, self.source_dataset, self.licence, self.summary = name, source_dataset, licence, summary
        self.release_inputs = (
            f"{name}_raw",
            *STAGE_ASSETS,
            *(f"replay_validation_{d}" for d in DIALECT_NAMES),
            *(f"roundtrip_{d}" for d in DIALECT_NAMES),
        )

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        ingested = values[f"{self.name}_raw"]
        if ingested is None:
            return None
        return release_part(
            ingested,
            [values[k] for k in STAGE_ASSETS],
            {d: values[f"replay_validation_{d}"] for d in DIALECT_NAMES},
            {d: values[f"roundtrip_{d}"] for d in DIALECT_NAMES},
        )


SUMMARY = (
    "function-writing tasks whose test cases are extracted from the Python tests (MBPP asserts; MBPP+ "
    "inputs with outputs from the sandboxed reference solution), with one signature inferred per task, "
    "collection and object types emitted once per element type, and one test block per task that prints "
    "a verdict per case"
)
SOURCE_DATASETS = {
    "mbpp": "google-research/mbpp",
    "mbpp_plus": "evalplus/mbppplus v0.1.0",
    "mbpp_ile": "google-research/mbpp, enhanced by ILE (plbench.operators)",
}
SUBSET = MbppSubset("mbpp", SOURCE_DATASETS["mbpp"], "CC-BY-4.0", SUMMARY)
