"""`plbench evaluate` throughput against raw psycopg round trips of the same statements, same run.

Candidates are the replay functions of the first N PostgreSQL tasks of MBPP (correct
solutions by construction), or with `--samples K` K candidates a task of the first N/K, graded one after
another as a model's samples are; evaluation runs them through `plbench.evaluate` (isolated sessions,
one call per case from the client, decoding and comparison in Python, classification). The
baseline runs setup, candidate and test block of each on one raw connection in a rolled-back
transaction.
Each round runs both over the same chunks of candidates, interleaved chunk by chunk and alternating which
goes first, so a machine shared with other work loads both alike. Besides wall time it prints the CPU
seconds each spends per candidate, in this process and in the server's processes (read from /proc,
when the server runs on this machine): under load those move less than wall time does.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/evaluate_throughput.py [--candidates 1000] [--rounds 5]
        [--samples 1]

With the library of another checkout (a before/after on the same server):
`PYTHONPATH=<checkout> PLBENCH_PG_DSN=<dsn> python bench/evaluate_throughput.py`.

Last measured (`--candidates 300 --rounds 5`, one server, the library chosen by PYTHONPATH):
- a session's first statement in the round trip that sets the session up (pg_session's `_begin_with`) / the library
  before it / the first again: evaluate / baseline 87.5% / 79.2% / 85.3% (544.7 / 493.8 / 543.8 candidates/s),
  client CPU a candidate 0.757 / 0.873 / 0.766 ms;
- then a task's calls made once for its candidates (grading.functions `_calls`) / without: `--samples 1` 91.7% /
  86.9% (client CPU 0.503 / 0.662 ms), `--samples 10` 97.4% / 89.4% (0.417 / 0.526 ms), against the baseline's
  0.22-0.30 ms. What is left is the Python around the round trips: sessions, decoding, comparing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as `python bench/...`

from bench.proc_stats import processes  # noqa: E402


def release_and_candidates(config: BuildConfig, limit: int, folder: Path, samples: int = 1) -> list[Candidate]:
    """`limit` candidates: `samples` of each task one after another, as a model's samples are graded."""
    ingested = [ingest(config, "mbpp")]
    artifacts = [
        a
        for a in build_tasks(infer_signatures(extract_test_cases(ingested, config), ingested)).items
        if a.dialect == "postgres"
    ]
    rows, candidates = [], []
    tasks = -(-limit // samples)
    for art in (artifacts * (tasks // len(artifacts) + 1))[:tasks]:
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
        candidates += [Candidate(art.task_id, "postgres", code)] * samples
    pq.write_table(pa.Table.from_pylist(rows), folder / "tasks.parquet")
    return candidates[:limit]


def postmaster_pid(engine: PostgresEngine) -> int | None:
    """The server's postmaster (the parent of a backend), or None when the server is not on this machine."""
    with engine.connection() as conn:  # read while the backend lives
        try:
            return int(Path(f"/proc/{conn.info.backend_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            return None


def server_cpu_s(master: int | None) -> float | None:
    """CPU seconds so far of the postmaster and its children (backends and background processes), the
    ended ones too (the postmaster reaps them: its cutime and cstime)."""
    if master is None:
        return None
    return sum(cpu for pid, (parent, cpu) in processes().items() if master in (pid, parent))


class Meter:
    """Wall, client CPU and server CPU seconds spent in what it measures."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster
        self.wall = self.client = 0.0
        self.server: float | None = 0.0

    def run(self, work, *args) -> None:
        server = server_cpu_s(self.postmaster)
        wall, client = time.perf_counter(), time.process_time()
        work(*args)
        self.wall += time.perf_counter() - wall
        self.client += time.process_time() - client
        after = server_cpu_s(self.postmaster)
        self.server = None if None in (server, after, self.server) else self.server + after - server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=50, help="candidates per interleaved chunk")
    parser.add_argument("--samples", type=int, default=1, help="candidates per task, graded one after another")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        candidates = release_and_candidates(config, args.candidates, folder, args.samples)
        tasks = {r["task_id"]: r for r in pq.read_table(folder / "tasks.parquet").to_pylist()}
        statements = [
            [s for s in (tasks[c.task_id]["setup_sql"], c.code, tasks[c.task_id]["test_block"]) if s]
            for c in candidates
        ]

        def run_evaluate(lo: int, hi: int) -> None:
            rows = evaluate(folder, candidates[lo:hi], {"postgres": engine})
            assert all(r["verdict"] == "PASS" for r in rows), "a replay candidate failed"

        def run_baseline(lo: int, hi: int) -> None:
            for task_statements in statements[lo:hi]:
                engine.run_baseline(task_statements)

        run_evaluate(0, len(candidates)), run_baseline(0, len(candidates))  # warm up
        postmaster = postmaster_pid(engine)
        rounds = []
        for i in range(args.rounds):
            ev, base = Meter(postmaster), Meter(postmaster)
            for k, lo in enumerate(range(0, len(candidates), args.chunk)):
                pair = ((ev, run_evaluate), (base, run_baseline))
                for meter, work in pair if (i + k) % 2 else pair[::-1]:
                    meter.run(work, lo, lo + args.chunk)
            rounds.append((ev, base))
    engine.close()
    n = len(candidates)
    ratios = sorted(b.wall / e.wall for e, b in rounds)
    print(f"server: {engine.version()}; candidates: {n}, {args.samples} a task; rounds: {args.rounds} (medians)")
    for label, pick in (("raw psycopg baseline", lambda r: r[1]), ("plbench evaluate", lambda r: r[0])):
        meters = [pick(r) for r in rounds]
        cpu = f"client CPU {statistics.median(m.client for m in meters) / n * 1e3:6.3f} ms"
        if all(m.server is not None for m in meters):
            cpu += f", server CPU {statistics.median(m.server for m in meters) / n * 1e3:6.3f} ms"
        print(
            f"{label + ':':22s}{n / statistics.median(m.wall for m in meters):8.1f} candidates/s; per candidate {cpu}"
        )
    print(f"evaluate / baseline:  {statistics.median(ratios):8.1%}  (per-round range {ratios[0]:.0%}-{ratios[-1]:.0%})")
    if all(e.server is not None and b.server is not None for e, b in rounds):
        cpu = statistics.median((b.client + b.server) / (e.client + e.server) for e, b in rounds)
        print(f"by CPU seconds (client + server) per candidate: {cpu:8.1%}")


if __name__ == "__main__":
    main()
