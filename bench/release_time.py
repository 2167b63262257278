"""Wall time, CPU and peak memory of `release_tables` and `release`, phase by phase, rerun from the
stage values an earlier build stored (`plbench build` once first).

    PYTHONPATH=. python bench/release_time.py [--storage DIR] [--out DIR] [--profile FILE] [--cold] [--no-warm-up]

Loads the values of every asset `release_tables` reads from the stage storage (default: this
checkout's `.cache/dagster-storage`), then runs what the two assets run, as they run it, timing
each phase: the subsets' release parts, the trivial-candidate gate (`gate_parts`, on this
checkout's PostgreSQL, where the build loaded the databases; its verdict cache is what the build left),
`prepare_release` (with the Oracle grammar gate; its verdict cache too is what the build left; with `--cold`
both caches start empty, as in a first build), the quality suites (GX loads on a thread during the grammar
gate, as in `release_tables`, unless `--no-warm-up`), the metadata check, and `release`'s crosscheck statuses
and write. CPU counts this process and its children (the grammar's Node processes, the sandbox); memory is
sampled every 0.2 s, its proportional size every 2 s (this process, and its tree with the PostgreSQL server).
With `--out` the release is written there (the stage-timings plot is drawn with fixed timings, so two runs
over the same values write byte-identical releases).
With `--profile`, cProfile's statistics of the whole run go to FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pickle
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from bench.rebuild_time import MemorySampler, pss_text
from pipelines.resources import open_engines
from plbench.config import BuildConfig, NotConfigured
from plbench.grading.trivial import gate_parts
from plbench.grading.verdict_cache import FILE_NAME as VERDICTS_FILE
from plbench.grading.verdict_cache import VerdictCache
from plbench.quality import check_release, warm_up
from plbench.release import apply_crosscheck, prepare_release, publish
from plbench.subsets import SUBSETS
from plbench.validation.metadata import metadata_accuracy

FIXED_TIMINGS = {"release_tables": 1.0, "release": 1.0}  # the plot of stage timings, the same every run


def load(storage: Path, name: str):
    with (storage / name).open("rb") as f:
        return pickle.load(f)


class Phases:
    """Each phase's wall and CPU seconds and its peak memory, printed as it ends."""

    def __init__(self, sampler: MemorySampler):
        self.sampler = sampler

    @contextmanager
    def phase(self, name: str):
        began, wall, cpu = time.time(), time.perf_counter(), own_cpu()
        yield
        time.sleep(0.25)  # one more memory sample inside the phase
        end = time.time()
        own, tree, pss = (b / 2**30 for b in self.sampler.peak_between(began, end))
        seconds, cpu, tree_cpu = (
            time.perf_counter() - wall - 0.25,
            own_cpu() - cpu,
            self.sampler.cpu_between(began, end),
        )
        print(
            f"  {name:34s} {seconds:7.1f} s {cpu:7.1f} s CPU (tree {tree_cpu:7.1f} s)  peak {own:5.2f} GB "
            f"(tree {tree:5.2f} GB, PSS {pss_text(pss)})",
            flush=True,
        )


def own_cpu() -> float:
    """CPU seconds of this process and of its children that ended (the grammar's Node processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path, help="stage storage (default: .cache/dagster-storage)")
    parser.add_argument("--out", type=Path, help="write the release under this folder")
    parser.add_argument("--profile", type=Path, help="write cProfile statistics here")
    parser.add_argument(
        "--without-postgres", action="store_true", help="no trivial candidates run (the gate says why): the rest alone"
    )
    parser.add_argument("--cold", action="store_true", help="both gates' verdict caches start empty (a first build)")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="GX loads when the quality suites start, not during the grammar gate"
    )
    args = parser.parse_args()
    config = BuildConfig.from_env(out_dir=args.out.resolve() if args.out else None)
    storage = args.storage or config.storage_dir
    subsets = tuple(SUBSETS.values())  # as pipelines/definitions.py hands them to release_tables
    sampler = MemorySampler(config.pg_data_dir)
    sampler.start()
    phases = Phases(sampler)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    began = time.time()
    with phases.phase("load stored values"):
        values = {key: load(storage, key) for key in sorted({k for s in subsets for k in s.release_inputs})}
        crosscheck = load(storage, "crosscheck")
    with phases.phase("release parts"):
        parts = [s.release_part(config, {k: values[k] for k in s.release_inputs}) for s in subsets]
    del values
    with contextlib.ExitStack() as stack:
        server = config  # with --cold, the caches move to an empty folder; the PostgreSQL server stays
        if args.cold:
            config = config.with_(cache_dir=Path(stack.enter_context(tempfile.TemporaryDirectory())))
        if args.without_postgres:
            with phases.phase("trivial candidates (gate_parts)"):
                parts = gate_parts(parts, SUBSETS, NotConfigured("--without-postgres"), config.workers)
        else:
            with open_engines(server, ["postgres"]) as engines, phases.phase("trivial candidates (gate_parts)"):
                cache = VerdictCache(config.cache_dir / VERDICTS_FILE, engines["postgres"])
                parts = gate_parts(parts, SUBSETS, engines["postgres"], config.workers, cache)
            print(f"trivial verdicts: {cache.counts}")
        with phases.phase("prepare_release (grammar gate)"):
            if not args.no_warm_up:
                warm_up()  # as release_tables does
            prepared = prepare_release(config, parts)
    del parts
    with phases.phase("quality suites (check_release)"):
        prepared.manifest["quality"] = check_release(prepared)
    with phases.phase("metadata_accuracy"):
        prepared.manifest["metadata_accuracy"] = metadata_accuracy(prepared.tables["tasks.parquet"][0])
    release_tables_end = time.time()
    with phases.phase("release: crosscheck statuses"):
        prepared = apply_crosscheck(prepared, crosscheck)
    if args.out:
        with phases.phase("release: publish"):
            path = publish(config, prepared, FIXED_TIMINGS)
        print(f"  written to {path}")
    end = time.time()
    if profiler:
        profiler.disable()
        profiler.dump_stats(str(args.profile))
    sampler.stopped.set()
    for label, start, stop in (("release_tables", began, release_tables_end), ("both", began, end)):
        own, tree, pss = (b / 2**30 for b in sampler.peak_between(start, stop))
        cpu = sampler.cpu_between(start, stop)
        print(
            f"{label}: {stop - start:.1f} s wall, {cpu:.1f} s tree CPU, peak {own:.2f} GB "
            f"(tree {tree:.2f} GB, PSS {pss:.2f} GB)"
        )
    print(f"CPU of this process and its ended children: {own_cpu():.1f} s")


if __name__ == "__main__":
    main()
