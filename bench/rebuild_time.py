"""Wall time and memory of a full rebuild from raw sources, per stage; then a rebuild in which nothing
changed, and single-stage reruns, against same-run baselines.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/rebuild_time.py [--subsets mbpp,mbpp_plus]

Runs the real job in-process against a throw-away Dagster instance and release folder (the
PostgreSQL server is started or reused as in a normal build):
1. baseline: a run of `mbpp_raw` alone, what any run costs before its stages do anything;
2. the full rebuild, every stage, with each stage's seconds (Dagster's step times) and the
   process's peak resident memory while it ran (sampled every 0.2 s);
3. `plbench build` again with nothing changed (pipelines/freshness.py: nothing should run);
4. reruns of `replay_validation_postgres` and of `normalized_databases_oracle` (every database)
   from the stored upstream values.
Goals (issue 12): full ≤ 240 s, no-op ≤ 30 s, one stage ≤ 20 s, Oracle emission ≤ 20 s, peak ≤ 2 GB.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import threading
import time
from pathlib import Path

import dagster as dg

from pipelines.cli import build, execute, report
from plbench.config import BuildConfig


class MemorySampler(threading.Thread):
    """The process's resident memory every `interval` seconds, with the time of each sample."""

    def __init__(self, interval: float = 0.2):
        super().__init__(daemon=True)
        self.interval, self.samples, self.stopped = interval, [], threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.samples.append((time.time(), resident_bytes()))

    def peak_between(self, start: float, end: float) -> int:
        return max((rss for t, rss in self.samples if start <= t <= end), default=0)


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def step_times(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[float, float]]:
    return {s.step_key: (s.start_time, s.end_time) for s in instance.get_run_step_stats(run_id) if s.end_time}


def timed(label: str, run, instance: dg.DagsterInstance, sampler: MemorySampler) -> float:
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    if result is not None and report(result, "quiet") != 0:
        raise SystemExit(f"{label} failed")
    print(f"\n{label}: {wall:.1f} s wall")
    if result is not None:
        steps = step_times(instance, result.run_id)
        for step, (begin, end) in sorted(steps.items(), key=lambda kv: kv[1][0] - kv[1][1]):
            peak = sampler.peak_between(begin, end) / 2**30
            print(f"  {step:48s} {end - begin:7.1f} s  peak {peak:5.2f} GB")
    return wall


def _checked(code: int) -> None:
    if code != 0:
        raise SystemExit("the rebuild in which nothing changed failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", help="comma-separated subsets (default: all)")
    args = parser.parse_args()
    subsets = tuple(args.subsets.split(",")) if args.subsets else None
    sampler = MemorySampler()
    sampler.start()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = BuildConfig.from_env(out_dir=root / "releases", subsets=subsets)
        (root / "dagster").mkdir()
        instance = dg.DagsterInstance.local_temp(str(root / "dagster"), overrides={"telemetry": {"enabled": False}})
        baseline = timed(
            "baseline: mbpp_raw alone", lambda: execute(config, [["mbpp_raw"]], instance), instance, sampler
        )
        full = timed("full rebuild", lambda: execute(config, instance=instance), instance, sampler)
        runs = instance.get_runs_count()
        noop = timed(
            "rebuild, nothing changed", lambda: _checked(build(config, instance, output="quiet")), instance, sampler
        )
        print(f"  runs started by it: {instance.get_runs_count() - runs}")
        spider = {"spider_plsql", "spider2"} & set(config.subsets)  # the database stages need one
        for asset in ("replay_validation_postgres", *(["normalized_databases_oracle"] if spider else [])):
            timed(f"{asset} alone", lambda a=asset: execute(config, [[a]], instance), instance, sampler)
    sampler.stopped.set()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(
        f"\nfull rebuild {full:.1f} s (goal ≤ 240), nothing changed {noop:.1f} s (goal ≤ 30), "
        f"baseline run {baseline:.1f} s"
    )
    print(f"peak resident memory: this process {peak:.2f} GB (goal ≤ 2), largest child process {children:.2f} GB")


if __name__ == "__main__":
    main()
