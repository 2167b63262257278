"""The trivial-candidate gate (`gate_parts`, run by `release_tables`) on the stage values an earlier build
stored (`plbench build` once first), against the baseline of every candidate graded in full, in the same run.

    PYTHONPATH=. python bench/gate_time.py [--storage DIR] [--subsets a,b] [--workers N] [--skip-baseline]

The subsets' release parts are made as bench/release_time.py makes them; then the gate runs twice on
them, on this checkout's PostgreSQL: first as the baseline (every candidate graded alone, in a session
and a copy of its database of its own: `plbench.evaluate.passes`, the gate before
`plbench.evaluate.passes_each`), then as the gate runs now. Each run prints its wall time and the CPU of
this process's tree with the PostgreSQL server, per subset the candidates graded; then the two
outputs (every part's rows, rejections and manifest) are compared, and a difference fails the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter
from pathlib import Path

from bench.rebuild_time import MemorySampler
from bench.release_time import load
from pipelines.resources import open_engines
from plbench.config import BuildConfig
from plbench.evaluate import passes
from plbench.grading import trivial
from plbench.subsets import SUBSETS


def each_alone(engine, graded: list[tuple[dict, list[str]]], schema: str | None = None) -> list[list[bool]]:
    """The baseline verdicts: each candidate graded as any candidate is."""
    return [[passes(engine, task, code, schema) for code in codes] for task, codes in graded]


def timed_gate(label: str, parts: list, config: BuildConfig, sampler: MemorySampler, passes_each) -> list:
    """The gate with `passes_each` for the verdicts, on an engine of its own (fresh pooled backends), as
    `release_tables` opens one."""
    graded: Counter = Counter()

    def counted(engine, tasks_codes, schema=None) -> list[list[bool]]:
        graded.update(task["subset"] for task, codes in tasks_codes for _ in codes)
        return passes_each(engine, tasks_codes, schema)

    original, trivial.passes_each = trivial.passes_each, counted
    began, wall = time.time(), time.perf_counter()
    try:
        with open_engines(config, ["postgres"]) as engines:
            out = trivial.gate_parts(parts, engines["postgres"], config.workers)
    finally:
        trivial.passes_each = original
    seconds = time.perf_counter() - wall
    time.sleep(0.5)  # a last CPU sample inside the run
    cpu = sampler.cpu_between(began, time.time())
    print(f"{label:9s} {seconds:7.1f} s wall, {cpu:7.1f} s tree CPU (with the server); graded: {dict(graded)}")
    return out


def outputs(parts: list) -> list:
    return [(p.subset, p.rows, p.rejections, p.manifest) if p is not None else None for p in parts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path, help="stage storage (default: .cache/dagster-storage)")
    parser.add_argument("--subsets", help="comma-separated subsets whose parts the gate runs on (default: all)")
    parser.add_argument("--workers", type=int, help="the gate's workers (default: the build's)")
    parser.add_argument("--skip-baseline", action="store_true", help="only the gate as it runs now")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    storage = args.storage or config.storage_dir
    wanted = args.subsets.split(",") if args.subsets else list(SUBSETS)
    subsets = [SUBSETS[name] for name in wanted]
    values = {key: load(storage, key) for key in sorted({k for s in subsets for k in s.release_inputs})}
    parts = [s.release_part(config, {k: values[k] for k in s.release_inputs}) for s in subsets]
    del values
    rows = {p.subset: len(p.rows) for p in parts if p is not None}
    print(f"release parts: {rows}")
    if args.workers:
        config = dataclasses.replace(config, workers=args.workers)
    sampler = MemorySampler(config.pg_data_dir)
    sampler.start()
    baseline = None if args.skip_baseline else timed_gate("baseline", parts, config, sampler, each_alone)
    now = timed_gate("gate", parts, config, sampler, trivial.passes_each)
    sampler.stopped.set()
    if baseline is not None:
        same = outputs(baseline) == outputs(now)
        print("outputs (rows, rejections, manifest of every part):", "identical" if same else "DIFFERENT")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
