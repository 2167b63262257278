"""Wall time, CPU and peak memory of the release's quality suites (`check_release`), this checkout's code
against a baseline revision's (default `main`), on the `release_tables` value an earlier build stored.

    PYTHONPATH=. python bench/quality_memory.py [--storage DIR] [--baseline main] [--rounds 2]

Each revision runs in its own process (bench/revisions.py), rounds alternating which goes first. A run
loads the stored `PreparedRelease` (its file cells still point at that build's normalized/ files), then
times `check_release` on it while sampling its resident memory every 20 ms; it prints the memory after
loading and the peak during the suites. The reports (every suite's success, counts and failure lines)
must equal the baseline's.
Goal (issue 12): a full build's peak ≤ 2 GB, which `release_tables` set through these suites.
"""

from __future__ import annotations

import argparse
import pickle
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()
GB = 2**30


def child(storage: Path, out: Path) -> None:
    """One run of the suites with the code on PYTHONPATH."""
    import psutil

    from plbench.quality import check_release

    prepared = pickle.loads((storage / "release_tables").read_bytes())
    me, peak, done = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], me.memory_info().rss)

    loaded = me.memory_info().rss
    threading.Thread(target=sample, daemon=True).start()
    cpu, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    report = check_release(prepared)
    wall, used = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    done.set()
    seconds = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
    out.write_bytes(pickle.dumps({"run": (wall, seconds, loaded, max(peak[0], loaded)), "report": report}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path)
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, type=Path, metavar=("STORAGE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    from bench.revisions import OUT, revision_runs
    from plbench.config import BuildConfig

    config = BuildConfig.from_env()
    storage = (args.storage or config.storage_dir).resolve()
    runs: dict[str, list] = {args.baseline: [], "this checkout": []}
    argv = ["--child", str(storage), OUT]
    for r, label, got, _ in revision_runs(args.baseline, args.rounds, HERE, argv, config.pg_data_dir):
        runs[label].append((*got["run"], got["report"]))
        wall, cpu, loaded, peak = got["run"]
        print(
            f"round {r} {label:14s} {wall:6.1f} s wall {cpu:6.1f} s CPU; "
            f"{loaded / GB:.2f} GB loaded, peak {peak / GB:.2f} GB (+{(peak - loaded) / GB:.2f})"
        )
    reference = runs[args.baseline][0][4]
    for label, done in runs.items():
        same = all(d[4] == reference for d in done)
        walls, cpus = ([d[i] for d in done] for i in range(2))
        added = [(peak - loaded) / GB for *_, loaded, peak, _ in done]
        print(
            f"{label:14s} median {statistics.median(walls):6.1f} s wall, {statistics.median(cpus):6.1f} s CPU, "
            f"suites' peak over the loaded value +{statistics.median(added):.2f} GB; reports "
            + ("equal to the baseline's" if same else "DIFFERENT from the baseline's")
        )
    if not all(d[4] == reference for done in runs.values() for d in done):
        sys.exit(1)


if __name__ == "__main__":
    main()
