"""Normalizing and loading every Spider 1.0 database into PostgreSQL, against a raw COPY of the same rows.

Pipeline: for each database, read the SQLite file by introspection, decide the types,
emit the PostgreSQL DDL/data files and the Oracle ones, load PostgreSQL with COPY in one
transaction, and verify row counts and per-table checksums (`plbench.spider.stages`'s
work without the gold queries). Baseline, in the same run and on the same server: create
the already-emitted tables and COPY the already-coerced rows on one raw psycopg connection
(no reading, no type decisions, no files, no verification). Rounds alternate which goes first.

    python bench/normalize_load.py [--rounds 3]

Reads Spider 1.0 from PLBENCH_RAW_DIR (or downloads it). The goal (issue 3): ≤ 2 minutes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from psycopg import sql

from plbench.config import BuildConfig
from plbench.dialects import DIALECTS
from plbench.engines.postgres import PostgresEngine
from plbench.normalize.emit import normalize, write_files
from plbench.normalize.load import load_postgres
from plbench.normalize.sqlite_source import read_sqlite
from plbench.spider.stages import ingest_spider1


def run_pipeline(inputs, engine: PostgresEngine, out: Path) -> tuple[float, int]:
    start, rows = time.perf_counter(), 0
    with engine.connection() as conn:
        for name, path in sorted(inputs.databases.items()):
            source = read_sqlite(path, "spider1", name, path.name)
            postgres = normalize(source, "postgres")
            write_files(postgres, out)
            write_files(normalize(source, "oracle"), out)
            report = load_postgres(conn, postgres)
            if not report.verified:
                raise SystemExit(f"{name} did not load: {report.error or report.mismatches()}")
            rows += source.row_count()
    return time.perf_counter() - start, rows


def run_baseline(databases: list, engine: PostgresEngine) -> float:
    start = time.perf_counter()
    with engine.connection() as conn:
        for db in databases:
            schema = sql.Identifier(f"bench_{db.schema_name}")
            with conn.transaction():
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s}; SET LOCAL search_path = {s}").format(
                        s=schema
                    )
                )
                for statement in db.create_statements:
                    conn.execute(statement)
                with conn.cursor() as cur:
                    for table in db.tables:
                        with cur.copy(f"COPY {table.target.sql} FROM STDIN") as copy:
                            copy.write(DIALECTS["postgres"].copy_text(table))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config = BuildConfig.from_env()
    inputs = ingest_spider1(config)
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    prepared = [
        normalize(read_sqlite(path, "spider1", name, path.name), "postgres")
        for name, path in sorted(inputs.databases.items())
    ]
    print(f"{len(inputs.databases)} databases, {engine.version()}")
    pipeline_s, baseline_s = [], []
    with tempfile.TemporaryDirectory() as out:
        for r in range(args.rounds):
            order = ("pipeline", "baseline") if r % 2 == 0 else ("baseline", "pipeline")
            for which in order:
                if which == "pipeline":
                    seconds, rows = run_pipeline(inputs, engine, Path(out))
                    pipeline_s.append(seconds)
                else:
                    baseline_s.append(run_baseline(prepared, engine))
            print(f"round {r + 1}: pipeline {pipeline_s[-1]:.1f} s ({rows} rows), raw COPY {baseline_s[-1]:.1f} s")
    with engine.connection() as conn:
        for db in prepared:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"bench_{db.schema_name}")))
    engine.close()
    p, b = statistics.median(pipeline_s), statistics.median(baseline_s)
    print(f"median: pipeline {p:.1f} s (goal ≤ 120 s), raw COPY baseline {b:.1f} s, ratio {p / b:.2f}")


if __name__ == "__main__":
    main()
