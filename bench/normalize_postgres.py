"""`normalized_databases_postgres` over a sample of the Spider databases, this checkout's code against a
baseline revision's (default `main`), in the same run, on the same server; the reports compared.

    PLBENCH_RAW_DIR=../shared/raw_sources PYTHONPATH=. python bench/normalize_postgres.py \
        [--sample 30] [--baseline main] [--rounds 2] [--profile FILE]

Each revision runs `plbench.spider.stages.normalize_database` (emit, write, COPY into PostgreSQL, verify
row counts and checksums, the gold-query equivalence on Spider 1.0, the task records on Spider 2.0-Lite)
on every database of the sample, in its own process (bench/revisions.py), rounds alternating which goes
first. The sample: the `--sample` costliest databases of the build (by the seconds the stored
`normalized_databases_postgres` reports of `--storage` give, default this checkout's stage storage),
or the `--keys` given. The sources are read into the sources cache before the clock starts, as the
build's Oracle partitions do before the PostgreSQL ones. Prints wall time and the CPU of each process and
of the server; then whether the reports are equal: DDL, files and their checksums, decision counts, load
and verification per table, every gold query's class, texts and detail, the Spider 2.0-Lite tasks,
static problems (timings aside), and the files written under normalized/ byte for byte.
With `--profile`, one more run of this checkout's code under cProfile writes its statistics to FILE.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import filecmp
import os
import pickle
import resource
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def comparable(report) -> dict:
    """A report as plain values, without what differs between any two runs (timings, the output folder)."""
    out = dataclasses.asdict(report)
    out.pop("seconds")
    out["decisions"] = out["decisions"]["sha256"]
    if out["load"]:
        out["load"].pop("seconds")
    return out


def child(keys: list[str], out: Path, normalized: Path, cache: Path, profile: Path | None) -> None:
    """One run over `keys` with the code on PYTHONPATH (the server from PLBENCH_PG_DSN)."""
    from plbench.config import BuildConfig
    from plbench.engines.postgres import PostgresEngine
    from plbench.spider.stages import ingest_spider1, ingest_spider2, load_source, normalize_database

    config = BuildConfig.from_env(normalized_dir=normalized, cache_dir=cache)
    inputs = {"spider1": ingest_spider1(config), "spider2_lite": ingest_spider2(config)}
    split = [key.split(".", 1) for key in keys]
    for source, name in split:
        load_source(config, inputs[source], name)
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    profiler = cProfile.Profile() if profile else None
    cpu, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if profiler:
        profiler.enable()
    reports = {f"{s}.{n}": normalize_database(config, inputs[s], n, engine) for s, n in split}
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    wall, used = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    engine.close()
    seconds = wall, used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
    out.write_bytes(pickle.dumps({"seconds": seconds, "reports": {k: comparable(r) for k, r in reports.items()}}))


def sample(storage: Path, size: int) -> list[str]:
    """The `size` costliest databases of the stored build, in name order."""
    stored = storage / "normalized_databases_postgres"
    costs = sorted(((pickle.loads(p.read_bytes()).seconds, p.name) for p in stored.glob("*")), reverse=True)
    if not costs:
        raise SystemExit(f"{stored}: no stored reports to pick the sample from (give --storage or --keys)")
    return sorted(name for _, name in costs[:size])


def same_files(a: Path, b: Path) -> list[str]:
    """Paths under two folders whose files differ or exist on one side only."""
    cmp, differ = filecmp.dircmp(a, b), []

    def walk(d: filecmp.dircmp, prefix: str) -> None:
        differ.extend(f"{prefix}{n}" for n in d.left_only + d.right_only + d.funny_files)
        _, mismatch, errors = filecmp.cmpfiles(d.left, d.right, d.common_files, shallow=False)
        differ.extend(f"{prefix}{n}" for n in mismatch + errors)
        for name, sub in d.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(cmp, "")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", type=Path)
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--keys", help="comma-separated partition keys instead of the costliest")
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--child", nargs=4, metavar=("KEYS", "OUT", "NORMALIZED", "CACHE"), help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        keys, out, normalized, cache = args.child
        child(keys.split(","), Path(out), Path(normalized), Path(cache), args.child_profile)
        return

    from bench.revisions import ROOT, export_revision, run_child, scratch, server_uri
    from plbench.config import BuildConfig

    config = BuildConfig.from_env()
    os.environ["PLBENCH_PG_DSN"] = config.pg_dsn or server_uri(config.pg_data_dir)
    keys = args.keys.split(",") if args.keys else sample((args.storage or config.storage_dir).resolve(), args.sample)
    print(f"{len(keys)} databases; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with scratch() as tmp:
        roots = {args.baseline: export_revision(args.baseline, Path(tmp)), "this checkout": ROOT}
        runs: dict[str, list] = {label: [] for label in roots}

        def run(label: str, r: int, profile: Path | None = None) -> None:
            out, normalized = Path(tmp) / "out.pkl", Path(tmp) / f"normalized-{r}-{label.replace(' ', '_')}"
            argv = ["--child", ",".join(keys), str(out), str(normalized), str(config.cache_dir)]
            server = run_child(
                roots[label], HERE, argv + (["--child-profile", str(profile)] if profile else []), config.pg_data_dir
            )
            got = pickle.loads(out.read_bytes())
            wall, cpu = got["seconds"]
            runs[label].append((wall, cpu, server, got["reports"], normalized))
            print(f"round {r + 1} {label:14s} {wall:6.1f} s wall {cpu:6.1f} s CPU, server {server:6.1f} s CPU")

        for r in range(args.rounds):
            for label in list(roots)[:: 1 if r % 2 == 0 else -1]:
                run(label, r)
        if args.profile:
            run("this checkout", args.rounds, args.profile)
            print(f"profile of this checkout's run: {args.profile}")
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        reference, reference_files = runs[args.baseline][0][3], runs[args.baseline][0][4]
        equal = True
        for label, done in runs.items():
            walls, cpus, servers = ([d[i] for d in done] for i in range(3))
            reports_differ = sorted({k for d in done for k in reference if d[3].get(k) != reference[k]})
            files_differ = sorted({f for d in done for f in same_files(reference_files, d[4])})
            equal = equal and not reports_differ and not files_differ
            print(
                f"{label:14s} median {statistics.median(walls):6.1f} s wall, {statistics.median(cpus):6.1f} s CPU, "
                f"server {statistics.median(servers):6.1f} s CPU; reports differing from the baseline's: "
                f"{reports_differ or 'none'}; files differing: {files_differ[:10] or 'none'}"
            )
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
