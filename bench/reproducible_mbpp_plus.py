"""Same inputs and configuration, idle or busy machine: byte-identical MBPP+ test cases.

    PLBENCH_RAW_DIR=/work/shared/raw_sources python bench/reproducible_mbpp_plus.py

Runs the MBPP+ test-case stage (`ingest` then `extract_test_cases`, the build's own
functions and configuration) twice: first as the machine is, then with every core kept
busy by other processes. Prints the sha256 of each run's serialized table (tasks with
their cases, and every rejection with its reason), whether they are byte-identical, the
rejections by reason, and where the per-case and per-task costs (CPU and wall seconds,
as the sandbox measured them) sit against the configured budgets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plbench import pipeline, values  # noqa: E402
from plbench.config import BuildConfig  # noqa: E402

_BUSY_LOOP = "while True:\n    pass\n"


def _serialized(out: pipeline.StageOutput) -> bytes:
    rows = []
    for task in out.items:
        cases = [[values.dumps(c.args), values.dumps(c.expected), c.origin] for c in task.cases]
        rows.append([task.source_id, task.entry_point, list(task.param_names), cases, repr(task.comparison)])
        rows[-1] += [task.base_case_count, list(task.notes)]
    rejections = [dataclasses.asdict(r) for r in out.rejections]
    return json.dumps({"tasks": rows, "rejections": rejections}, sort_keys=True).encode()


class _Recorder:
    """Passes the stage's sandbox results through unchanged, keeping them for the cost figures."""

    def __init__(self) -> None:
        self.results = []
        self._run_many = pipeline.run_many

    def __call__(self, jobs, limits, workers):
        results = self._run_many(jobs, limits, workers=workers)
        self.results = results
        return results


def _build(config: BuildConfig) -> tuple[bytes, pipeline.StageOutput, list, float, float]:
    recorder = _Recorder()
    pipeline.run_many = recorder
    try:
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        out = pipeline.extract_test_cases([pipeline.ingest(config, "mbpp_plus")], config)
        seconds = time.perf_counter() - start
    finally:
        pipeline.run_many = recorder._run_many
    return _serialized(out), out, recorder.results, seconds, max(load_before, os.getloadavg()[0])


def _costs(results: list) -> None:
    cases = [c for r in results for c in r.cases if c.status != "timeout" or c.cpu_seconds]
    tasks = sorted((sum(c.cpu_seconds for c in r.cases), sum(c.wall_seconds for c in r.cases)) for r in results)
    cpu = sorted(c.cpu_seconds for c in cases)
    print(f"  {len(cpu)} cases run; CPU seconds per case:")
    for share in (0.5, 0.9, 0.99, 0.999):
        print(f"    {share:6.1%} at most {cpu[int(share * (len(cpu) - 1))]:.4f}")
    edges = [0, 0.001, 0.01, 0.1, 1, 2, 5, 10, 20, float("inf")]
    spans = list(zip(edges, edges[1:]))
    bins = Counter(next(span for span in spans if span[0] <= t < span[1]) for t in cpu)
    print("    histogram: " + ", ".join(f"[{lo}, {hi}) s: {bins[(lo, hi)]}" for lo, hi in spans))
    costliest = max(cases, key=lambda c: c.cpu_seconds)
    print(f"    costliest case {costliest.cpu_seconds:.2f} s CPU, {costliest.wall_seconds:.2f} s wall")
    print(f"  costliest task {tasks[-1][0]:.2f} s CPU ({tasks[-1][1]:.2f} s wall); next {tasks[-2][0]:.2f} s CPU")


def main() -> None:
    config = BuildConfig.from_env()
    if config.raw_dir is None:
        raise SystemExit("set PLBENCH_RAW_DIR to the raw mirror (this bench reads no network)")
    limits = config.sandbox
    print(f"budgets: {limits}")
    runs = {}
    runs["as is"] = _build(config)
    loaders = [subprocess.Popen([sys.executable, "-c", _BUSY_LOOP]) for _ in range(os.cpu_count() or 2)]
    try:
        runs[f"{len(loaders)} busy loops"] = _build(config)
    finally:
        for loader in loaders:
            loader.kill()
            loader.wait()
    for name, (data, out, results, seconds, load) in runs.items():
        reasons = dict(sorted(Counter(r.reason_code for r in out.rejections).items()))
        print(f"{name}: {seconds:.1f} s, load average up to {load:.1f}, sha256 {hashlib.sha256(data).hexdigest()}")
        print(f"  {len(out.items)} tasks, {sum(len(t.cases) for t in out.items)} cases; rejections {reasons}")
        _costs(results)
    first, second = (run[0] for run in runs.values())
    print(f"byte-identical: {first == second} ({len(first)} bytes)")
    sys.exit(0 if first == second else 1)


if __name__ == "__main__":
    main()
