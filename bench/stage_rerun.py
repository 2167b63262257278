"""`plbench validate --stage S [--dialect D]`: rerunning one stage from the stored upstream values, this
checkout's code against a baseline revision's (default `main`), on an earlier build's instance.

    PYTHONPATH=. python bench/stage_rerun.py --stage normalize --dialect oracle [--baseline main] [--rounds 2]

Runs the command (`pipelines.cli.main`, with --quiet) on the Dagster instance of DAGSTER_HOME (default
`.dagster/`) with the settings of PLBENCH_SETTINGS (default the checkout's), so `plbench build` once
first, each revision in its own process (bench/revisions.py), rounds alternating which goes first.
Prints, per run, the seconds from the process's start to the command's end (what a researcher waits),
of which `pipelines.cli.main` itself, and its exit status.
Goal (issue 12): one stage ≤ 20 s.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def child(command: list[str], out: Path) -> None:
    """One `plbench` command with the code on PYTHONPATH."""
    import psutil

    from pipelines.cli import main as plbench

    began = time.perf_counter()
    status = plbench(command)
    end = time.perf_counter()
    whole = time.time() - psutil.Process().create_time()
    out.write_bytes(pickle.dumps({"run": (whole, end - began, status)}))


def main() -> int:
    if sys.argv[1:2] == ["--child"]:  # --child OUT -- <plbench command>
        child(sys.argv[4:], Path(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", required=True)
    parser.add_argument("--dialect")
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from bench.revisions import OUT, revision_runs
    from plbench.config import BuildConfig

    config = BuildConfig.from_env()
    runs: dict[str, list] = {args.baseline: [], "this checkout": []}
    command = ["validate", "--stage", args.stage, *(["--dialect", args.dialect] if args.dialect else []), "--quiet"]
    argv = ["--child", OUT, "--", *command]
    for r, label, got, _ in revision_runs(args.baseline, args.rounds, HERE, argv, config.pg_data_dir):
        runs[label].append(got["run"])
        whole, run, status = got["run"]
        print(f"round {r} {label:14s} {whole:5.1f} s in all, the command {run:5.1f} s, exit {status}")
    for label, done in runs.items():
        print(
            f"{label:14s} median {statistics.median(d[0] for d in done):5.1f} s in all, "
            f"the command {statistics.median(d[1] for d in done):5.1f} s"
        )
    return 0 if all(d[2] == 0 for done in runs.values() for d in done) else 1


if __name__ == "__main__":
    sys.exit(main())
