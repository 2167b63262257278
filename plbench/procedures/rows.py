"""Release rows of the procedures subset: one TaskRow per scenario task and dialect.

`setup_sql` is a JSON array of statements (the task's setup, run in order before the candidate is
installed); `test_cases` the calls in the row's dialect; `call_suite` the calls with what the reference
did after each (error, output lines, per-table row count and content hash).
"""

from __future__ import annotations

import json
from pathlib import Path

from plbench.config import BuildConfig
from plbench.normalize.emit import schema_name
from plbench.procedures.grade import Grade, ProcedureTask
from plbench.procedures.oracle_replay import database_folder
from plbench.procedures.oracle_workspace import OracleCopy
from plbench.procedures.scenarios import grade_submission
from plbench.procedures.seeds import SUBSET
from plbench.procedures.tasks import ScenarioTask
from plbench.procedures.workspace import DatabaseCopy, Workspace
from plbench.taskrow import TaskRow, as_record

COMPARISON = {
    "after_every_call": True,
    "state": "every user table: row count and sum(hash_record_extended(row, 0)), computed in SQL",
    "outputs": "output lines in order",
    "error": "the SQLSTATE (PostgreSQL) or ORA- code (Oracle) raised, or none",
    "setup_sql": "a JSON array of statements run in order",
}
CROSSCHECK = "the crosscheck stage covers MBPP tasks"


def task_row(task: ScenarioTask, engine_version: str | None) -> TaskRow:
    split = task.seed_id.split("/")[1]
    return TaskRow(
        task_id=task.task_id,
        subset=SUBSET,
        dialect=task.dialect,
        source_dataset=f"Spider 1.0 {split}",
        source_id=task.source_id,  # one input per (scenario, seed): the counts reconcile
        database=task.database,
        prompt=task.prompt,
        entry_point=task.entry_point,
        signature=json.dumps([{"name": n, "type": t} for n, t in task.signature]),
        setup_sql=json.dumps(list(task.setup_sql), ensure_ascii=False),
        scaffold=task.scaffold,
        reference_code=task.reference_code,
        test_cases=json.dumps([c["call"][task.dialect] for c in task.call_suite["calls"]], ensure_ascii=False),
        comparison=json.dumps(COMPARISON, sort_keys=True),
        plsql_constructs=task.constructs,
        tables_required=task.tables,
        replay_status=task.replay_status,
        replay_engine=engine_version if task.replay_status == "passed" else None,
        replay_detail=task.replay_detail or None,
        mutants_total=task.mutants_total,
        mutants_killed=task.mutants_killed,
        crosscheck_detail=CROSSCHECK,
        notes=task.notes,
        scenario=task.scenario,
        materials=json.dumps(task.materials, ensure_ascii=False, sort_keys=True),
        call_suite=json.dumps(task.call_suite, ensure_ascii=False, sort_keys=True),
        statements=task.statements,
        cyclomatic=task.cyclomatic,
    )


def grading_task(task: dict | TaskRow, db: DatabaseCopy | OracleCopy) -> ProcedureTask:
    """What the grader needs, read back from a release row, a TaskRow or its dict (PostgreSQL rows: their
    calls are CALLs)."""
    task = as_record(task) if isinstance(task, TaskRow) else task
    suite = json.loads(task["call_suite"])
    expected = tuple(
        (c["error"], tuple(c["lines"]), tuple(sorted((t, tuple(v)) for t, v in c["state"].items())))
        for c in suite["calls"]
    )
    stored = tuple(t for t in suite["initial_state"] if t not in {n.strip('"') for n in db.tables})
    return ProcedureTask(
        task["task_id"],
        db,
        tuple(json.loads(task["setup_sql"])),
        task["reference_code"],
        tuple(json.loads(task["test_cases"])),
        expected,
        stored,
    )


def database_schema(task: dict) -> str:
    """The schema a procedures row's database is loaded into (the Spider 1.0 databases the build loads)."""
    return schema_name("spider1", task["database"])


def grade_task(engine, task: dict, candidate: str, schema: str | None = None, verdict_only: bool = False) -> Grade:
    """Grade a candidate (for B3 also line edits) against a released procedures row (a dict) on its loaded
    database; `verdict_only`: see plbench.procedures.scenarios.grade_submission."""
    schema = schema or database_schema(task)
    with engine.session(reads=(schema,)) as session:
        db = DatabaseCopy.introspect(session, schema)
    return _graded_on(engine, task, db, candidate, verdict_only)


def grade_tasks_each(
    engine, graded: list[tuple[dict, list[str]]], schema: str | None = None
) -> list[list[bool | None]]:
    """Per (task, candidates) of tasks of one database, whether each candidate passes every call
    (`grade_task`'s Grade.verdict: None when a call ran out of time), all graded one after another in one
    copy of the database, every run rolled back before the next: for the candidates the build made (the
    trivial-candidate gate), as a candidate's session-level leftovers would reach the next one's run."""
    schemas = {schema or database_schema(task) for task, _ in graded}
    if len(schemas) != 1:
        raise ValueError(f"one copy grades the tasks of one database, not of {len(schemas)}")
    (schema,) = schemas
    with engine.session(reads=(schema,)) as session:
        workspace = Workspace(session, DatabaseCopy.introspect(session, schema))
        return [[_graded_on(engine, t, workspace.db, c, True, workspace).verdict for c in codes] for t, codes in graded]


def grade_copied(engine, task: dict, candidate: str, normalized_dir: Path | None = None) -> Grade:
    """Grade a candidate against a released procedures row on an engine whose sessions copy the database
    themselves (Oracle): the copy is made from the database's normalized files under `normalized_dir`
    (default: the build's, BuildConfig.from_env); ValueError when they are not there."""
    folder = database_folder(normalized_dir or BuildConfig.from_env().normalized_dir, task["database"])
    return _graded_on(engine, task, OracleCopy.read(folder, task["database"]), candidate)


def _graded_on(
    engine,
    task: dict,
    db: DatabaseCopy | OracleCopy,
    candidate: str,
    verdict_only: bool = False,
    workspace: Workspace | None = None,
) -> Grade:
    materials, suite = json.loads(task.get("materials") or "{}"), json.loads(task["call_suite"])
    graded = grading_task(task, db)
    return grade_submission(engine, graded, task["scenario"], materials, suite, candidate, verdict_only, workspace)


def grade_row(engine, row: TaskRow, candidate: str) -> Grade:
    """Grade a candidate against a released procedures row on its loaded database."""
    return grade_task(engine, as_record(row), candidate)
