"""Reset cost for procedural runs: a savepoint per run in one workspace vs a database copied from a template.

Both variants run the same procedure and calls and read the same state; the first resets by
`ROLLBACK TO SAVEPOINT` inside the workspace session (what plbench.procedures.workspace does), the second
by `CREATE DATABASE … TEMPLATE` of a database holding the same tables, then connecting to it, then
`DROP DATABASE`. Prints the mean milliseconds per run of each, measured in the same process.

    python bench/procedure_reset.py [runs]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.procedures.seeds import database_seeds  # noqa: E402
from plbench.procedures.workspace import Workspace  # noqa: E402
from tests.procedure_fixtures import load_fixture  # noqa: E402

TEMPLATE, COPY = "plb_bench_template", "plb_bench_copy"


def _savepoint_runs(engine, fixture, validated, runs: int) -> float:
    seed = validated.seed
    calls = [r.call for r in validated.suite.expected]
    with engine.session(reads=(fixture.pg.schema_name,)) as session:
        workspace = Workspace(session, fixture.pg)
        start = time.perf_counter()
        for _ in range(runs):
            workspace.run(seed.setup["postgres"], seed.procedure.render("postgres"), calls, seed.writes)
        return (time.perf_counter() - start) / runs


def _template_runs(engine, fixture, validated, runs: int) -> float:
    seed = validated.seed
    calls = [r.call for r in validated.suite.expected]
    with engine.connection() as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
        dsn = psycopg.conninfo.make_conninfo(engine._dsn, dbname=TEMPLATE)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for statement, table in zip(fixture.pg.create_statements, fixture.pg.tables):
                conn.execute(statement)
                with conn.cursor().copy(f"COPY {table.target.sql} FROM STDIN") as copy:
                    for row in table.rows:
                        copy.write_row(row)
        start = time.perf_counter()
        for _ in range(runs):
            admin.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(COPY), sql.Identifier(TEMPLATE))
            )
            with psycopg.connect(psycopg.conninfo.make_conninfo(engine._dsn, dbname=COPY), autocommit=True) as conn:
                for statement in [*seed.setup["postgres"], seed.procedure.render("postgres"), *calls]:
                    conn.execute(statement)
                    for table in [t.target.sql for t in fixture.pg.tables] + list(seed.writes):
                        conn.execute(f"SELECT count(*), sum(hash_record_extended(r, 0)) FROM {table} r").fetchone()
            admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(COPY)))
        elapsed = (time.perf_counter() - start) / runs
        admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(TEMPLATE)))
        return elapsed


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    config = BuildConfig.from_env()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    fixture = load_fixture(engine, Path(tempfile.mkdtemp()))
    validated = next(v for v in database_seeds(engine, fixture.pg, fixture.oracle, fixture.equivalence).seeds)
    savepoint = _savepoint_runs(engine, fixture, validated, runs)
    template = _template_runs(engine, fixture, validated, runs)
    print(f"runs: {runs}, calls per run: {len(validated.suite.expected)}, tables: {len(fixture.pg.tables) + 1}")
    print(f"savepoint reset in one workspace: {savepoint * 1000:8.1f} ms per run")
    print(f"CREATE DATABASE ... TEMPLATE:     {template * 1000:8.1f} ms per run ({template / savepoint:.1f}x)")
    engine.close()


if __name__ == "__main__":
    main()
