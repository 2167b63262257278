"""Spider-PLSQL task rows: a task per Spider 1.0 dev question and dialect whose reference block
reproduces the gold output on PostgreSQL (and, with an Oracle server, on Oracle)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field

import sqlglot

from plbench.config import BuildConfig, NotConfigured
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_block_structure
from plbench.engines.base import Engine
from plbench.engines.postgres import PostgresEngine
from plbench.normalize.emit import normalize
from plbench.normalize.load import load_oracle
from plbench.normalize.sqlite_source import connect_readonly
from plbench.records import Rejection
from plbench.spider.gold import GoldQuery
from plbench.spider.stages import DatabaseReport, SpiderInputs, load_source
from plbench.spider.tasks import (
    ReferenceOutput,
    TaskBuildError,
    output_kinds,
    outputs_match,
    prompt,
    reference_block,
    reference_output,
)
from plbench.taskrow import TaskRow, by_dialect

SPIDER_CONSTRUCTS = ("anonymous_block", "cursor_for_loop")
GOLD_ONLY_CONSTRUCTS = ("anonymous_block",)  # a bare gold query: a solution fills in the scaffold's block
SPIDER_CROSSCHECK = "the crosscheck stage covers MBPP tasks"
SCAFFOLDS = {
    name: target.print_rows_scaffold("<one result row, fields separated by commas>")
    for name, target in DIALECTS.items()
}


@dataclass
class SpiderTasks:
    """Task rows (release schema) per dialect, and the questions each dialect did not release."""

    subset: str
    rows: list[TaskRow] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    validation: dict[str, dict] = field(default_factory=dict)  # dialect -> replay counts for the manifest
    seconds: float = 0.0


def _equivalence_by_query(reports: dict[str, DatabaseReport]) -> dict[tuple[str, str], object]:
    return {(r.query.split, r.query.source_id): r for rep in reports.values() for r in rep.equivalence}


def build_spider_plsql(
    config: BuildConfig,
    inputs: SpiderInputs,
    pg: dict[str, DatabaseReport],
    oracle: dict[str, DatabaseReport],
    engine: PostgresEngine,
    oracle_engine: Engine | NotConfigured,
) -> SpiderTasks:
    """A task per dev question and dialect whose reference block reproduces the gold output on PostgreSQL
    (and, with an Oracle server, on Oracle too)."""
    start = time.perf_counter()
    out = SpiderTasks(inputs.subset)
    equivalence = _equivalence_by_query(pg)
    passed = 0
    for name in sorted({q.db_id for q in inputs.questions}):
        questions = [q for q in inputs.questions if q.db_id == name]
        with (
            contextlib.closing(connect_readonly(inputs.databases[name])) as source,
            engine.session(reads=(pg[name].schema_name,)) as session,
        ):
            for q in questions:
                try:
                    rows, rejections = _question_rows(
                        q,
                        source,
                        session,
                        pg[name],
                        oracle.get(name),
                        equivalence.get(("dev", q.source_id)),
                        engine.version(),
                    )
                except TaskBuildError as exc:
                    out.rejections.append(
                        Rejection(inputs.subset, q.source_id, "spider_tasks", exc.reason_code, exc.detail[:1000])
                    )
                    continue
                out.rows += rows
                out.rejections += [
                    Rejection(inputs.subset, q.source_id, "spider_tasks", code, detail[:1000], dialect=dialect)
                    for dialect, code, detail in rejections
                ]
                passed += 1
    out.validation = {
        "postgres": {
            "ran": True,
            "engine": engine.version(),
            "passed": passed,
            "failed": len(inputs.questions) - passed,
        },
        "oracle": _validate_on_oracle(config, inputs, out, oracle_engine),
    }
    out.seconds = time.perf_counter() - start
    return out


def _validate_on_oracle(
    config: BuildConfig, inputs: SpiderInputs, out: SpiderTasks, engine: Engine | NotConfigured
) -> dict:
    """With an Oracle server: load each database there and run every Oracle row's reference block; a row
    that does not print its reference output is rejected for Oracle. Without one, the rows stay not_run."""
    if isinstance(engine, NotConfigured):
        return {"ran": False, "reason": engine.reason}
    failed, passed = set(), {}
    rows = by_dialect(out.rows)[engine.dialect]
    for name in sorted({r.database for r in rows}):
        with engine.session() as session:
            load = load_oracle(session, normalize(load_source(config, inputs, name), "oracle"))
            for row in (r for r in rows if r.database == name):
                why = _oracle_verdict(session, row) if load.verified else f"{name} did not load: {load.error}"
                if why:
                    failed.add(row.key)
                    out.rejections.append(
                        Rejection(
                            inputs.subset,
                            row.source_id,
                            "spider_tasks",
                            "oracle_reference_failed",
                            why[:1000],
                            dialect="oracle",
                        )
                    )
                else:
                    passed[row.key] = row.with_(
                        replay_status="passed", replay_engine=engine.version(), replay_detail=None
                    )
    out.rows = [passed.get(r.key, r) for r in out.rows if r.key not in failed]
    return {"ran": True, "engine": engine.version(), "passed": len(rows) - len(failed), "failed": len(failed)}


def _oracle_verdict(session, row: TaskRow) -> str:
    """Why the row's Oracle reference block does not print its reference output ('' when it does)."""
    expected = json.loads(row.test_cases)
    printed = session.execute(row.reference_code)
    if not printed.ok:
        return f"{printed.error.code}: {printed.error.message}" if printed.error else "timed out"
    if outputs_match(ReferenceOutput(tuple(expected["expected_lines"]), expected["ordered"]), printed.lines):
        return ""
    return f"expected {expected['expected_lines'][:5]}, printed {printed.lines[:5]}"


def _question_rows(
    q: GoldQuery, source, session, pg: DatabaseReport, oracle: DatabaseReport | None, equivalence, engine_version: str
) -> tuple[list[TaskRow], list[tuple[str, str, str]]]:
    """The question's rows, and (dialect, reason, detail) for a dialect that does not release it.

    Raises TaskBuildError when no dialect can release it (the PostgreSQL reference fails)."""
    if not pg.load or not pg.load.verified:
        raise TaskBuildError("database_not_loaded", f"{q.db_id}: {pg.load.error if pg.load else pg.not_run}")
    if equivalence is None or equivalence.cls != "identical":
        outcome = equivalence.cls if equivalence else "not_checked"
        raise TaskBuildError(f"gold_{outcome}", f"{q.sql} -> {getattr(equivalence, 'detail', '')}")
    reference = reference_output(source, q.sql)
    pg_sql = equivalence.postgres_sql
    described = session.query(pg_sql)
    if not described.ok:
        raise TaskBuildError("gold_fails_on_postgres", f"{described.error}")
    kinds = output_kinds(described)
    pg_block = reference_block("postgres", pg_sql, kinds)
    printed = session.execute(pg_block)
    if not printed.ok:
        raise TaskBuildError("reference_block_failed", f"{printed.error}")
    if not outputs_match(reference, printed.lines):
        raise TaskBuildError(
            "reference_output_mismatch", f"expected {list(reference.lines)[:5]}, printed {printed.lines[:5]}"
        )
    rows = [_task_row(q, "postgres", pg, pg_block, reference, "passed", engine_version, "")]
    ora_sql = equivalence.oracle_sql
    if not ora_sql or oracle is None:
        return rows, [("oracle", "oracle_transpile_failed", equivalence.oracle_error or "no Oracle report")]
    try:
        ora_block = reference_block("oracle", ora_sql, kinds, oracle.ddl)
    except (TaskBuildError, sqlglot.errors.ParseError) as exc:
        return rows, [("oracle", "oracle_static_check_failed", str(exc))]
    problems = check_block_structure(ora_block)
    if problems:
        return rows, [("oracle", "oracle_static_check_failed", "; ".join(problems))]
    rows.append(_task_row(q, "oracle", oracle, ora_block, reference, "not_run", None, oracle.not_run))
    return rows, []


def _task_row(
    q: GoldQuery,
    dialect: str,
    db: DatabaseReport,
    block: str,
    reference: ReferenceOutput,
    status: str,
    engine: str | None,
    detail: str,
) -> TaskRow:
    expected = {"expected_lines": list(reference.lines), "ordered": reference.ordered}
    return TaskRow(
        task_id=f"spider_plsql/{q.source_id}",
        subset="spider_plsql",
        dialect=dialect,
        source_dataset="Spider 1.0 dev",
        source_id=q.source_id,
        database=q.db_id,
        prompt=prompt(q.question, q.db_id, dialect, db.ddl, reference.ordered),
        scaffold=SCAFFOLDS[dialect],
        reference_code=block,
        test_cases=json.dumps(expected, ensure_ascii=False),
        comparison=json.dumps({"ordered": reference.ordered, "output_format": "plbench.spider.output_format"}),
        plsql_constructs=SPIDER_CONSTRUCTS,
        replay_status=status,
        replay_engine=engine,
        replay_detail=detail or None,
        crosscheck_detail=SPIDER_CROSSCHECK,
    )
