"""Emitting and statically checking the Oracle side of every Spider database (the work of the
`normalized_databases_oracle` partitions without a server), phase by phase.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/oracle_emission.py [--limit N] [--workers N]

First in this process, database by database and phase by phase, as `plbench.spider.stages.normalize_database`
does it: read the source (from the sources cache the PostgreSQL partitions fill; the first run fills it),
decide and emit the Oracle DDL and data, write the files, check the DDL without a server; reading the
sources alone, which every dialect's partition pays, is the phases' baseline. Then the stage as the build
runs it (`normalize_databases` without an Oracle server: `--workers` spawned processes, default
BuildConfig.workers), against that one process's total of the same run. Wall and CPU seconds are printed
(the stage's CPU counts its worker processes), since this machine is shared: CPU time moves less with the
load. Goal (issue 12): the stage ≤ 20 s.

Measured with the sources cache warm, main at 6d4553d and then the collector pause and less per-column
work (collector_paused, Dialect.sized_families, one JSON encoder), in one run at load 6 on the 2
shared cores: one process 25.5 -> 15.9 s CPU (read 3.4 -> 1.3, normalize 8.8 -> 4.6, write 10.2 -> 7.8,
check 3.1 -> 2.2); the stage 25.4 -> 20.0 s CPU with its 2 workers, 52.7 -> 43.0 s wall at that load.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

from plbench.collector import collector_paused
from plbench.config import BuildConfig, NotConfigured
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_database_ddl
from plbench.normalize.emit import normalize, write_files
from plbench.spider.stages import (
    ingest_spider1,
    ingest_spider2,
    load_source,
    normalize_databases,
    partition_key,
)

PHASES = ("read", "normalize", "write", "check")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N databases of each dataset")
    parser.add_argument("--workers", type=int, help="the stage's processes (default: BuildConfig.workers)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        config = BuildConfig.from_env(
            normalized_dir=Path(out), cache_dir=Path(".cache").resolve(), workers=args.workers
        )
        inputs = [ingest_spider1(config), ingest_spider2(config)]
        oracle = DIALECTS["oracle"]
        wall, cpu, slowest, count = Counter(), Counter(), [], 0
        for dataset in inputs:
            for name in sorted(dataset.databases)[: args.limit]:
                marks = phase_marks(config, dataset, name, oracle)
                for phase, (a, b) in zip(PHASES, zip(marks, marks[1:])):
                    wall[phase] += b[0] - a[0]
                    cpu[phase] += b[1] - a[1]
                slowest.append((marks[-1][1] - marks[1][1], dataset.source, name))
                count += 1
        keys = [partition_key(d.source, name) for d in inputs for name in sorted(d.databases)[: args.limit]]
        stage_wall, stage_cpu = stage_seconds(config, {d.source: d for d in inputs}, keys)
    print(f"{count} databases")
    for phase in PHASES:
        print(f"  {phase:10s} {wall[phase]:8.1f} s wall {cpu[phase]:8.1f} s CPU")
    emit_wall = sum(wall[p] for p in PHASES[1:])
    emit_cpu = sum(cpu[p] for p in PHASES[1:])
    print(f"emission + static checks: {emit_wall:.1f} s wall, {emit_cpu:.1f} s CPU (goal ≤ 20 s)")
    print(f"baseline, reading the sources alone: {wall['read']:.1f} s wall, {cpu['read']:.1f} s CPU")
    one_wall, one_cpu = sum(wall.values()), sum(cpu.values())
    print(f"one process, reading included: {one_wall:.1f} s wall, {one_cpu:.1f} s CPU")
    print(
        f"the stage (normalize_databases, {config.workers} processes): {stage_wall:.1f} s wall, "
        f"{stage_cpu:.1f} s CPU with its workers (goal ≤ 20 s wall; {one_wall / stage_wall:.2f}x one process)"
    )
    print("costliest databases (CPU s, without reading):")
    for seconds, source, name in sorted(slowest, reverse=True)[:5]:
        print(f"  {source}.{name}: {seconds:.1f}")


@collector_paused()  # as normalize_database runs them
def phase_marks(config: BuildConfig, dataset, name: str, oracle) -> list[tuple[float, float]]:
    """Wall and CPU clocks before the first phase and after each."""
    marks = [(time.perf_counter(), time.process_time())]
    source = load_source(config, dataset, name)
    marks.append((time.perf_counter(), time.process_time()))
    db = normalize(source, "oracle")
    marks.append((time.perf_counter(), time.process_time()))
    write_files(db, config.normalized_dir)
    marks.append((time.perf_counter(), time.process_time()))
    check_database_ddl(oracle, db)
    marks.append((time.perf_counter(), time.process_time()))
    return marks


def stage_seconds(config: BuildConfig, inputs: dict, keys: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (this process and the workers it reaped) of the stage over `keys`."""

    def cpu() -> float:
        return sum(
            r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        )

    engine = NotConfigured("no Oracle server in this bench", "oracle")
    start, start_cpu = time.perf_counter(), cpu()
    for _key, report in normalize_databases(config, inputs, keys, engine):
        assert not report.static_problems, report.static_problems[:3]
    return time.perf_counter() - start, cpu() - start_cpu


if __name__ == "__main__":
    main()
