"""The trivial-candidate gate (`gate_parts`, run by `release_tables`) on the stage values an earlier build
stored (`plbench build` once first), against the baseline of every candidate graded in full, in the same run.

    PYTHONPATH=. python bench/gate_time.py [--storage DIR] [--subsets a,b] [--workers N] [--skip-baseline]
    PYTHONPATH=. python bench/gate_time.py --baseline REV [--rounds 2] [--storage DIR] [--subsets a,b]
    PYTHONPATH=. python bench/gate_time.py --kept [--storage DIR] [--subsets a,b]

The subsets' release parts are made as bench/release_time.py makes them; then the gate runs twice on
them, on this checkout's PostgreSQL: first as the baseline (every candidate graded alone, in a session
and a copy of its database of its own: `plbench.evaluate.passes`, the gate before
`plbench.evaluate.passes_each`), then as the gate runs now. Each run prints its wall time and the CPU of
this process's tree with the PostgreSQL server, per subset the candidates graded; then the two
outputs (every part's rows, rejections and manifest) are compared, and a difference fails the run.

With `--kept` the baseline is the gate as it runs now with no verdicts kept, then the gate runs with a
verdict cache (plbench.grading.verdict_cache, in a temporary file): empty, so it grades everything and
fills it, then filled, as a rebuild whose tasks did not change finds it; outputs compared with the baseline's.

With `--baseline REV` the baseline is instead the gate of a git revision, each revision in a process of
its own (bench/revisions.py), rounds alternating which goes first; the outputs are compared by a digest
of their text.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.rebuild_time import MemorySampler
from bench.release_time import load
from pipelines.resources import open_engines
from plbench.config import SETTINGS_ENV, BuildConfig
from plbench.evaluate import passes
from plbench.grading import trivial
from plbench.grading.verdict_cache import FILE_NAME, VerdictCache
from plbench.subsets import SUBSETS

HERE = Path(__file__).resolve()


def each_alone(engine, graded: list[tuple[dict, list[str]]], schema: str | None = None) -> list[list[bool]]:
    """The baseline verdicts: each candidate graded as any candidate is."""
    return [[passes(engine, task, code, schema) for code in codes] for task, codes in graded]


def timed_gate(
    label: str, parts: list, config: BuildConfig, sampler: MemorySampler, passes_each, kept_in: Path | None = None
) -> list:
    """The gate with `passes_each` for the verdicts, on an engine of its own (fresh pooled backends), as
    `release_tables` opens one; with `kept_in`, the verdict cache there."""
    graded: Counter = Counter()

    def counted(engine, tasks_codes, schema=None) -> list[list[bool]]:
        graded.update(task["subset"] for task, codes in tasks_codes for _ in codes)
        return passes_each(engine, tasks_codes, schema)

    original, trivial.passes_each = trivial.passes_each, counted
    began, wall = time.time(), time.perf_counter()
    try:
        with open_engines(config, ["postgres"]) as engines:
            cache = VerdictCache(kept_in, engines["postgres"]) if kept_in else None
            out = trivial.gate_parts(parts, SUBSETS, engines["postgres"], config.workers, cache)
    finally:
        trivial.passes_each = original
    seconds = time.perf_counter() - wall
    time.sleep(0.5)  # a last CPU sample inside the run
    cpu = sampler.cpu_between(began, time.time())
    kept = f"; verdicts {cache.counts}" if cache else ""
    print(f"{label:9s} {seconds:7.1f} s wall, {cpu:7.1f} s tree CPU (with the server); graded: {dict(graded)}{kept}")
    return out


def kept_verdicts(parts: list, config: BuildConfig, sampler: MemorySampler) -> None:
    """The gate with no verdicts kept (the baseline), then with a verdict cache, empty and then filled."""
    baseline = timed_gate("baseline", parts, config, sampler, trivial.passes_each)
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("empty", "filled"):
            out = timed_gate(label, parts, config, sampler, trivial.passes_each, Path(tmp) / FILE_NAME)
            same = outputs(baseline) == outputs(out)
            print(f"  outputs ({label} cache):", "identical" if same else "DIFFERENT")
            if not same:
                raise SystemExit(1)


def outputs(parts: list) -> list:
    return [(p.subset, p.rows, p.rejections, p.manifest) if p is not None else None for p in parts]


def digest(parts: list) -> str:
    """A digest of `outputs`, by their text (a pickle would depend on which objects they share)."""
    h = hashlib.sha256()
    for out in outputs(parts):
        for piece in (out[:1] + (*out[1], *out[2], out[3])) if out is not None else (None,):
            h.update(repr(piece).encode())
    return h.hexdigest()


def release_parts(config: BuildConfig, storage: Path, wanted: list[str]) -> list:
    subsets = [SUBSETS[name] for name in wanted]
    values = {key: load(storage, key) for key in sorted({k for s in subsets for k in s.release_inputs})}
    return [s.release_part(config, {k: values[k] for k in s.release_inputs}) for s in subsets]


def child(storage: Path, wanted: str, out: Path) -> None:
    """The gate of the code on PYTHONPATH: its wall seconds and the digest of its outputs."""
    config = BuildConfig.from_env()
    parts = release_parts(config, storage, wanted.split(","))
    with open_engines(config, ["postgres"]) as engines:
        start = time.perf_counter()
        gated = trivial.gate_parts(parts, SUBSETS, engines["postgres"], config.workers)
        wall = time.perf_counter() - start
    out.write_bytes(pickle.dumps({"wall": wall, "digest": digest(gated)}))


def against_revision(baseline: str, rounds: int, storage: Path, wanted: list[str], config: BuildConfig) -> None:
    from bench.revisions import OUT, revision_runs, scratch

    runs: dict[str, list] = {baseline: [], "this checkout": []}
    argv = ["--child", str(storage.resolve()), ",".join(wanted), OUT]
    with scratch() as tmp:  # the children read this checkout's settings, whichever tree their code is in
        settings = Path(tmp) / "settings.json"
        settings.write_text(json.dumps(config.to_settings()), encoding="utf-8")
        os.environ[SETTINGS_ENV] = str(settings)
        for r, label, got, server in revision_runs(baseline, rounds, HERE, argv, config.pg_data_dir):
            runs[label].append((got["wall"], server, got["digest"]))
            print(f"round {r} {label:14s} {got['wall']:6.1f} s wall, {server:6.1f} s server CPU")
    for label, done in runs.items():
        walls, servers = [d[0] for d in done], [d[1] for d in done]
        print(f"{label:14s} median {statistics.median(walls):6.1f} s wall, {statistics.median(servers):6.1f} s server")
    same = len({d[2] for done in runs.values() for d in done}) == 1
    print("outputs (rows, rejections, manifest of every part):", "identical" if same else "DIFFERENT")
    if not same:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path, help="stage storage (default: .cache/dagster-storage)")
    parser.add_argument("--subsets", help="comma-separated subsets whose parts the gate runs on (default: all)")
    parser.add_argument("--workers", type=int, help="the gate's workers (default: the build's)")
    parser.add_argument("--skip-baseline", action="store_true", help="only the gate as it runs now")
    parser.add_argument("--baseline", help="a git revision whose gate is the baseline, each in its own process")
    parser.add_argument("--rounds", type=int, default=2, help="with --baseline: runs of each revision")
    parser.add_argument("--kept", action="store_true", help="the gate without, then with a verdict cache")
    parser.add_argument("--child", nargs=3, metavar=("STORAGE", "SUBSETS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], Path(args.child[2]))
        return
    config = BuildConfig.from_env()
    storage = args.storage or config.storage_dir
    wanted = args.subsets.split(",") if args.subsets else list(SUBSETS)
    if args.baseline:
        against_revision(args.baseline, args.rounds, storage, wanted, config)
        return
    parts = release_parts(config, storage, wanted)
    rows = {p.subset: len(p.rows) for p in parts if p is not None}
    print(f"release parts: {rows}")
    if args.workers:
        config = dataclasses.replace(config, workers=args.workers)
    sampler = MemorySampler(config.pg_data_dir)
    sampler.start()
    if args.kept:
        kept_verdicts(parts, config, sampler)
        sampler.stopped.set()
        return
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
