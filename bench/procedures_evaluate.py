"""Grading procedural tasks against a raw psycopg baseline doing the same calls and state reads, same run.

The tasks are the PostgreSQL release rows the procedures build makes of the test fixture database
(tests/procedure_fixtures.py), repeated to `--tasks`; each candidate is the task's reference (it passes).
The graded path is `plbench.procedures.rows.grade_row`, what `plbench evaluate` runs per procedures row
(the catalog read, a fresh workspace in an isolated session as the candidate role under the statement
timeout and watchdog, per-call verdicts; B2 rows, which grading also times, are left out). The baseline, on one
raw connection, does per task what grading must: copy the database's tables into a scratch schema, run
the setup, install the procedure, read every table's state, then each call followed by the same state
read, and roll back. Rounds alternate which goes first; the figures are medians of the rounds.

    python bench/procedures_evaluate.py [--tasks 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.procedures.build import database_procedures  # noqa: E402
from plbench.procedures.rows import grade_row, task_row  # noqa: E402
from plbench.procedures.workspace import DatabaseCopy, state_query  # noqa: E402
from tests.procedure_fixtures import load_fixture  # noqa: E402


def graded(engine, rows) -> float:
    start = time.perf_counter()
    for row in rows:
        if not grade_row(engine, row, row.reference_code).passed:
            raise SystemExit(f"{row.task_id}: the reference does not pass")
    return time.perf_counter() - start


def raw(dsn: str, db: DatabaseCopy, rows) -> float:
    """The same statements on one plain connection: no role, no per-statement savepoint, no watchdog."""
    source = psycopg.sql.Identifier(db.schema_name).as_string(None)
    with psycopg.connect(dsn, prepare_threshold=None) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS plb_bench_raw")
        conn.commit()
        start = time.perf_counter()
        for row in rows:
            conn.execute(f"SET LOCAL search_path = plb_bench_raw, {source}, pg_catalog")
            for table in db.tables:
                conn.execute(
                    f"CREATE TABLE {table} (LIKE {source}.{table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
                    f"INCLUDING INDEXES); INSERT INTO {table} SELECT * FROM {source}.{table}"
                )
            for statement in json.loads(row.setup_sql):
                conn.execute(statement)
            conn.execute(row.reference_code)
            extra = tuple(t for t in json.loads(row.call_suite)["initial_state"] if t not in db.tables)
            state = state_query("plb_bench_raw", list(db.tables) + list(extra))
            conn.execute(state).fetchall()
            for call in json.loads(row.test_cases):
                try:
                    conn.execute(f"SAVEPOINT c; {call}; {state}")
                except psycopg.Error:  # a call the task expects to raise: undo it, then read the state
                    conn.execute(f"ROLLBACK TO SAVEPOINT c; {state}")
            conn.rollback()
        elapsed = time.perf_counter() - start
        conn.execute("DROP SCHEMA plb_bench_raw")
        conn.commit()
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config = BuildConfig.from_env()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    fixture = load_fixture(engine, Path(tempfile.mkdtemp()))
    built = database_procedures(engine, fixture.pg, fixture.oracle, fixture.equivalence)
    # B2 rows are left out: grading times them on a scaled copy, work the baseline has no counterpart for
    made = [task_row(t, engine.version()) for t in built.tasks if t.dialect == "postgres" and t.scenario != "b2"]
    rows = (made * (args.tasks // len(made) + 1))[: args.tasks]
    db, calls = DatabaseCopy.of(fixture.pg), sum(len(json.loads(r.test_cases)) for r in rows)
    times: dict[str, list[float]] = {"grade_row": [], "raw psycopg": []}
    for n in range(args.rounds):
        order = [("grade_row", lambda: graded(engine, rows)), ("raw psycopg", lambda: raw(engine._dsn, db, rows))]
        for name, run in order if n % 2 == 0 else order[::-1]:
            times[name].append(run())
    print(f"tasks: {len(rows)} ({calls} calls; no B2 rows), rounds: {args.rounds}")
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(f"{name:12s} {median:7.2f} s  {len(rows) / median:7.1f} tasks/s  {calls / median:7.1f} calls/s")
    ratio = statistics.median(times["raw psycopg"]) / statistics.median(times["grade_row"])
    print(f"graded throughput: {ratio:.0%} of the raw baseline (target >= 50%)")
    engine.close()


if __name__ == "__main__":
    main()
