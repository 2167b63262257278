"""Rerunning `replay_validation_postgres` from the stored `mbpp_tasks`, this checkout's code against a
baseline revision's (default `main`), in the same run, on the same server; the verdicts compared.

    PYTHONPATH=. python bench/replay_rerun.py [--storage DIR] [--baseline main] [--rounds 2] [--profile FILE]

What the asset does, without Dagster: `replay_stage(mbpp_tasks, engine, BuildConfig.workers)` on this
checkout's PostgreSQL server, each revision in its own process (bench/revisions.py), rounds alternating
which goes first. `--storage` is the stage storage of an earlier build (default: this checkout's
`.cache/dagster-storage`). Prints each run's wall time, the CPU of the process and of the server, and
whether every task's verdict (status, detail, mutants run and killed, survivors) equals the baseline's.
With `--profile`, one more run of this checkout's code under cProfile writes its statistics to FILE.
Goal (issue 12): the rerun ≤ 20 s.
"""

from __future__ import annotations

import argparse
import cProfile
import pickle
import resource
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def child(storage: Path, out: Path, profile: Path | None) -> None:
    """One run of the stage with the code on PYTHONPATH (the server from PLBENCH_PG_DSN)."""
    from plbench.config import BuildConfig
    from plbench.engines.postgres import PostgresEngine
    from plbench.mbpp.validation_stages import replay_stage

    config = BuildConfig.from_env()
    tasks = pickle.loads((storage / "mbpp_tasks").read_bytes())
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    profiler = cProfile.Profile() if profile else None
    cpu, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if profiler:
        profiler.enable()
    report = replay_stage(tasks, engine, config.workers)
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    wall, used = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    engine.close()
    verdicts = [
        (r.task_id, r.dialect, r.status, r.detail, r.mutants_total, r.mutants_killed, r.survivors)
        for r in report.results
    ]
    seconds = wall, used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
    out.write_bytes(pickle.dumps({"seconds": seconds, "verdicts": verdicts}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path)
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--child", nargs=2, type=Path, metavar=("STORAGE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.child_profile)
        return

    import os

    from bench.revisions import OUT, ROOT, revision_runs, run_child, scratch, server_uri
    from plbench.config import BuildConfig

    config = BuildConfig.from_env()
    storage = (args.storage or config.storage_dir).resolve()
    os.environ["PLBENCH_PG_DSN"] = config.pg_dsn or server_uri(config.pg_data_dir)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: dict[str, list] = {args.baseline: [], "this checkout": []}
    argv = ["--child", str(storage), OUT]
    for r, label, got, server in revision_runs(args.baseline, args.rounds, HERE, argv, config.pg_data_dir):
        runs[label].append((*got["seconds"], server, got["verdicts"]))
        wall, cpu = got["seconds"]
        print(f"round {r} {label:14s} {wall:6.1f} s wall {cpu:6.1f} s CPU, server {server:6.1f} s CPU")
    if args.profile:
        with scratch() as tmp:
            out = Path(tmp) / "out.pkl"
            argv = ["--child", str(storage), str(out), "--child-profile", str(args.profile)]
            run_child(ROOT, HERE, argv, config.pg_data_dir)
        print(f"profile of this checkout's run: {args.profile}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    reference = runs[args.baseline][0][3]
    for label, done in runs.items():
        same = all(v == reference for *_, v in done)
        walls, cpus, servers = ([d[i] for d in done] for i in range(3))
        print(
            f"{label:14s} median {statistics.median(walls):6.1f} s wall, {statistics.median(cpus):6.1f} s CPU, "
            f"server {statistics.median(servers):6.1f} s CPU; {len(reference)} verdicts "
            + ("equal to the baseline's" if same else "DIFFERENT from the baseline's")
        )
    if not all(v == reference for done in runs.values() for *_, v in done):
        sys.exit(1)


if __name__ == "__main__":
    main()
