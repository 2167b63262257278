"""`plbench evaluate` throughput against raw psycopg round trips of the same statements, same run.

Candidates are the replay functions of the first N PostgreSQL tasks of MBPP (correct
solutions by construction); evaluation runs them through `plbench.evaluate` (isolated sessions,
one call per case from the client, decoding and comparison in Python, classification). The
baseline runs setup, candidate and test block of each on one raw connection in a rolled-back
transaction.
Rounds alternate which goes first.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/evaluate_throughput.py [--candidates 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench.config import BuildConfig
from plbench.engines.postgres import PostgresEngine
from plbench.evaluate import Candidate, evaluate
from plbench.mbpp.artifacts import TaskEmitter
from plbench.mbpp.stages import build_tasks, extract_test_cases, infer_signatures, ingest


def release_and_candidates(config: BuildConfig, limit: int, folder: Path) -> list[Candidate]:
    ingested = [ingest(config, "mbpp")]
    artifacts = [
        a
        for a in build_tasks(infer_signatures(extract_test_cases(ingested, config), ingested)).items
        if a.dialect == "postgres"
    ]
    rows, candidates = [], []
    for art in (artifacts * (limit // len(artifacts) + 1))[:limit]:
        comparison = art.task.comparison
        rows.append(
            {
                "task_id": art.task_id,
                "subset": art.task.subset,
                "dialect": "postgres",
                "entry_point": art.task.entry_point,
                "signature": art.signature,
                "setup_sql": art.setup_sql,
                "test_block": art.test_block,
                "test_cases": art.test_cases,
                "comparison": json.dumps(
                    {"atol": comparison.atol, "rtol": comparison.rtol, "unordered": comparison.unordered}
                ),
            }
        )
        code = TaskEmitter(art.task, "postgres").replay_function([c.expected for c in art.task.cases])
        candidates.append(Candidate(art.task_id, "postgres", code))
    pq.write_table(pa.Table.from_pylist(rows), folder / "tasks.parquet")
    return candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    config = BuildConfig.from_env()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        candidates = release_and_candidates(config, args.candidates, folder)
        tasks = {r["task_id"]: r for r in pq.read_table(folder / "tasks.parquet").to_pylist()}
        statements = [
            [s for s in (tasks[c.task_id]["setup_sql"], c.code, tasks[c.task_id]["test_block"]) if s]
            for c in candidates
        ]

        def run_evaluate() -> float:
            start = time.perf_counter()
            rows = evaluate(folder, candidates, {"postgres": engine})
            assert all(r["verdict"] == "PASS" for r in rows), "a replay candidate failed"
            return time.perf_counter() - start

        def run_baseline() -> float:
            start = time.perf_counter()
            for task_statements in statements:
                engine.run_baseline(task_statements)
            return time.perf_counter() - start

        run_evaluate(), run_baseline()  # warm up
        ev, base = [], []
        for i in range(args.rounds):
            pair = (run_evaluate, run_baseline) if i % 2 else (run_baseline, run_evaluate)
            first, second = pair[0](), pair[1]()
            (ev if pair[0] is run_evaluate else base).append(first)
            (base if pair[0] is run_evaluate else ev).append(second)
    engine.close()
    ratios = sorted(b / e for b, e in zip(base, ev))
    n = len(candidates)
    print(f"server: {engine.version()}; candidates: {n}; rounds: {args.rounds} (medians)")
    print(f"raw psycopg baseline: {n / statistics.median(base):8.1f} candidates/s")
    print(f"plbench evaluate:     {n / statistics.median(ev):8.1f} candidates/s")
    print(f"evaluate / baseline:  {statistics.median(ratios):8.1%}  (per-round range {ratios[0]:.0%}-{ratios[-1]:.0%})")


if __name__ == "__main__":
    main()
