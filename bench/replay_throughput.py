"""Replay throughput of the PostgreSQL engine against raw psycopg round trips, same statements, same run.

For each task: the setup DDL, the replay function and the test block. The baseline runs
them on one raw psycopg connection in a transaction that is rolled back (no savepoints,
no notice capture, no schema); the engine runs them through isolated sessions exactly
as replay validation does. Both run single-threaded, on the same server, interleaved in
rounds (alternating which goes first) so machine noise hits both alike.

    python bench/replay_throughput.py [--tasks 300] [--rounds 7]

Reads MBPP from PLBENCH_RAW_DIR (or downloads it). Prints tasks/s for both and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

from plbench.config import BuildConfig
from plbench.engines.postgres import PostgresEngine
from plbench.mbpp.artifacts import TaskEmitter
from plbench.mbpp.stages import build_tasks, extract_test_cases, infer_signatures, ingest


def task_statements(config: BuildConfig, limit: int) -> list[list[str]]:
    ingested = [ingest(config, "mbpp")]
    typed = infer_signatures(extract_test_cases(ingested, config), ingested)
    statements = []
    for task in [a.task for a in build_tasks(typed).items if a.dialect == "postgres"][:limit]:
        em = TaskEmitter(task, "postgres")
        statements.append(
            em.setup_statements() + [em.replay_function([c.expected for c in task.cases])] + em.test_block_statements()
        )
    return statements


def run_engine(engine: PostgresEngine, tasks: list[list[str]]) -> float:
    start = time.perf_counter()
    for statements in tasks:
        with engine.session() as session:
            for statement in statements:
                session.execute(statement)
    return time.perf_counter() - start


def run_baseline(engine: PostgresEngine, tasks: list[list[str]]) -> float:
    start = time.perf_counter()
    for statements in tasks:
        engine.run_baseline(statements)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    config = BuildConfig.from_env()
    tasks = task_statements(config, args.tasks)
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    try:
        run_baseline(engine, tasks[:20])  # warm both paths: connections, catalog caches
        run_engine(engine, tasks[:20])
        base, eng = [], []
        for i in range(args.rounds):  # alternate which goes first: the machine's noise drifts
            if i % 2:
                eng.append(run_engine(engine, tasks))
                base.append(run_baseline(engine, tasks))
            else:
                base.append(run_baseline(engine, tasks))
                eng.append(run_engine(engine, tasks))
    finally:
        engine.close()
    b, e = statistics.median(base), statistics.median(eng)
    ratios = sorted(x / y for x, y in zip(base, eng))
    print(f"server: {engine.version()}; tasks: {len(tasks)}; rounds: {args.rounds} (medians)")
    print(f"raw psycopg baseline: {len(tasks) / b:8.1f} tasks/s  ({b:.2f} s)")
    print(f"engine sessions:      {len(tasks) / e:8.1f} tasks/s  ({e:.2f} s)")
    print(f"engine / baseline:    {statistics.median(ratios):8.1%}  (per-round range {ratios[0]:.0%}-{ratios[-1]:.0%})")


if __name__ == "__main__":
    main()
