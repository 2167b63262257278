"""Score candidate solutions against a release: every candidate gets a verdict per case, and the run goes on.

Per candidate, by the kind of its task (plbench.grading): a function task (MBPP, MBPP+) calls the
candidate per case from the client and compares in Python; a block task (Spider) compares the lines
the block printed; a procedure task (procedures) runs its call suite and compares, after every call,
the error, the output and every table's state (one case per call; EX is Suite Pass@1). A candidate
that does not install is classified from the engine's diagnostic; when the task's own setup fails,
the row is a `reference_error`, left out of the scores. A candidate
naming no task of the release, an unknown dialect or a dialect without an engine gets rows that say
so (`not_graded`), also left out of the scores. A candidate that ends its own database session is
its failure; a server that stops answering stops the run (the results so far are kept).

Metrics per subset and dialect, over the candidates given (plbench.grading.results):
- Mean Test Pass@1: the mean, over tasks, of the share of cases passed;
- Suite Pass@1: the share of tasks whose every case passed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from plbench.config import DIALECT_NAMES, NotConfigured
from plbench.diagnostics import INVALID_ARTIFACT, not_unicode
from plbench.engines.base import Engine, EngineUnavailable
from plbench.grading.blocks import grade_block
from plbench.grading.functions import grade_function
from plbench.grading.procedures import grade_procedure
from plbench.grading.results import NOT_GRADED, every_case
from plbench.procedures.rows import database_schema, grade_tasks_each


@dataclass(frozen=True)
class Candidate:
    task_id: str
    dialect: str
    code: str


def read_solutions(path: Path) -> list[Candidate]:
    """JSONL of {task_id, dialect, code}; a malformed line is an error naming the line."""
    candidates = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} line {n}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            candidates.append(Candidate(str(row["task_id"]), str(row["dialect"]), str(row["code"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} line {n}: not a {{task_id, dialect, code}} object ({exc})") from exc
    return candidates


@dataclass(frozen=True)
class Release:
    """What grading reads of a release: task rows by (task_id, dialect), database schemas by
    (database, dialect) for the block tasks."""

    name: str
    tasks: dict[tuple[str, str], dict]
    schemas: dict[tuple[str, str], str]


def read_release(release_dir: Path) -> Release:
    databases = release_dir / "databases.parquet"
    rows = pq.read_table(databases, use_threads=False).to_pylist() if databases.exists() else []
    return Release(release_dir.name, read_tasks(release_dir), loaded_schemas(rows))


def loaded_schemas(database_rows: list[dict]) -> dict[tuple[str, str], str]:
    """(database, dialect) -> the schema it was loaded into, from `databases.parquet` rows."""
    return {(db["database"], db["dialect"]): db["schema_name"] for db in database_rows if db["loaded"]}


def read_tasks(release_dir: Path) -> dict[tuple[str, str], dict]:
    """The release's task rows by (task_id, dialect)."""
    if not (release_dir / "tasks.parquet").is_file():
        raise ValueError(f"{release_dir} is not a release folder: it has no tasks.parquet")
    # One thread: reading is a few milliseconds, and threads cost more than that on a loaded machine.
    table = pq.read_table(release_dir / "tasks.parquet", use_threads=False)
    return {(r["task_id"], r["dialect"]): r for r in table.to_pylist()}


def task_kind(task: dict) -> str | None:
    """How a release row is graded: "procedure" (a call suite), "function" (a signature to call), "block"
    (lines to print), or None."""
    if task.get("call_suite"):
        return "procedure"
    if task.get("signature"):
        return "function"
    cases = json.loads(task["test_cases"])
    return "block" if isinstance(cases, dict) and cases.keys() & {"expected_lines", "reference_results"} else None


def grade(engine: Engine, task: dict, code: str, schema: str | None = None, verdict_only: bool = False) -> list[dict]:
    """Case rows (case, verdict, category, detail) of one candidate, whatever the candidate does to
    its own session; EngineUnavailable only when the server itself is gone. `verdict_only`: the rows
    need only say whether every case passed (`passes`)."""
    if why := not_unicode(code):
        return _every_case(task, "NOT_RUN", INVALID_ARTIFACT, f"no engine can be sent the code: {why}")
    try:
        kind = task_kind(task)
        if kind == "procedure":
            return grade_procedure(engine, task, code, schema, verdict_only)
        if kind == "function":
            return grade_function(engine, task, code)
        return grade_block(engine, task, code, schema if engine.loaded(schema) else None)
    except EngineUnavailable as exc:
        if not engine.reachable():
            raise
        return _every_case(task, "ERROR", INVALID_ARTIFACT, f"the candidate ended its own database session: {exc}")


def _every_case(task: dict, verdict: str, category: str, detail: str) -> list[dict]:
    return every_case(len(json.loads(task["test_cases"])) if task.get("signature") else 1, verdict, category, detail)


# Case verdicts another run may decide otherwise: a case that ran out of time, or did not run at all.
UNSETTLED = frozenset({"TIMEOUT", "NOT_RUN"})


def passes(engine: Engine, task: dict, code: str, schema: str | None = None) -> bool | None:
    """Whether a candidate passes every case, as `grade` says, for a gate that needs nothing more: a
    procedure's calls stop at the first that fails, without the detail of what differs. None: it did not
    pass, but a case's verdict is UNSETTLED (a gate keeps no such verdict for a later build)."""
    verdicts = {r["verdict"] for r in grade(engine, task, code, schema, verdict_only=True)}
    if verdicts <= {"PASS"}:
        return True
    return None if verdicts & UNSETTLED else False


def passes_each(
    engine: Engine, graded: list[tuple[dict, list[str]]], schema: str | None = None
) -> list[list[bool | None]]:
    """`passes` of candidates the build made (the trivial-candidate gate): per (task, codes), of each code.
    Procedure tasks of one database share one copy of it (plbench.procedures.rows.grade_tasks_each);
    should a candidate end that session, each is graded alone, as `passes` grades any candidate."""
    tasks = [task for task, _ in graded]
    if tasks and all(task_kind(t) == "procedure" for t in tasks) and not engine.copies_databases:
        schema = schema or database_schema(tasks[0])
        try:
            if engine.loaded(schema):
                return grade_tasks_each(engine, graded, schema)
        except EngineUnavailable:
            if not engine.reachable():
                raise
    return [[passes(engine, task, code, schema) for code in codes] for task, codes in graded]


def _not_graded(cand: Candidate, why: str, subset: str | None = None) -> list[dict]:
    return [
        {
            "task_id": cand.task_id,
            "subset": subset,
            "dialect": cand.dialect,
            "case": None,
            "verdict": "NOT_RUN",
            "category": NOT_GRADED,
            "detail": why[:500],
        }
    ]


def run_candidates(
    release: Release,
    candidates: list[Candidate],
    engines: dict[str, Engine | NotConfigured],
    skip: set[int] = frozenset(),
) -> Iterator[tuple[int, Candidate, dict | None, list[dict]]]:
    """(index, candidate, task row or None, case rows) of every candidate whose index is not in `skip`.

    `engines` maps a dialect to its engine, or to the NotConfigured saying why there is none. The one execution path of
    candidates: `evaluate` scores what it yields and the implementation cross-check
    (plbench.validation.crosscheck) compares it with the Python reference.
    """
    for index, cand in enumerate(candidates):
        if index in skip:
            continue
        task = release.tasks.get((cand.task_id, cand.dialect))
        engine = engines.get(cand.dialect)
        if cand.dialect not in DIALECT_NAMES:
            rows = _not_graded(cand, f"unknown dialect {cand.dialect!r}; known: {', '.join(DIALECT_NAMES)}")
        elif task is None:
            rows = _not_graded(cand, f"{cand.task_id} ({cand.dialect}) is not a task of release {release.name}")
        elif task_kind(task) is None:
            rows = _not_graded(cand, f"no grader here for the tasks of {task['subset']}", task["subset"])
        elif engine is None or isinstance(engine, NotConfigured):
            why = engine.reason if engine else "not configured"
            rows = _not_graded(cand, f"no {cand.dialect} engine: {why}", task["subset"])
        else:
            schema = release.schemas.get((task.get("database"), cand.dialect))
            base = {"task_id": task["task_id"], "subset": task["subset"], "dialect": cand.dialect}
            rows = [{**base, **r} for r in grade(engine, task, cand.code, schema)]
        yield index, cand, task, [{"candidate": index, **r} for r in rows]


def evaluate(release_dir: Path, candidates: list[Candidate], engines: dict[str, Engine | NotConfigured]) -> list[dict]:
    """Case rows of every candidate (see `run_candidates`)."""
    return [row for _, _, _, rows in run_candidates(read_release(release_dir), candidates, engines) for row in rows]
