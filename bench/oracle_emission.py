"""Emitting and statically checking the Oracle side of every Spider database (the work of the
`normalized_databases_oracle` partitions without a server), phase by phase.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/oracle_emission.py [--limit N]

Per database, as `plbench.spider.stages.normalize_database` does it: read the source (from the
sources cache the PostgreSQL partitions fill; the first run fills it), decide and emit the Oracle
DDL and data, write the files, check the DDL without a server. Baseline, in the same run: reading
the sources alone, which every dialect's partition pays. Wall and CPU seconds are printed, since
this machine is shared (CPU time moves less with the load). Goal (issue 12): ≤ 20 s in all.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from plbench.config import BuildConfig
from plbench.dialects import DIALECTS
from plbench.dialects.static_checks import check_database_ddl
from plbench.normalize.emit import normalize, write_files
from plbench.spider.stages import ingest_spider1, ingest_spider2, load_source

PHASES = ("read", "normalize", "write", "check")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N databases of each dataset")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        config = BuildConfig.from_env(normalized_dir=Path(out), cache_dir=Path(".cache").resolve())
        inputs = [ingest_spider1(config), ingest_spider2(config)]
        oracle = DIALECTS["oracle"]
        wall, cpu, slowest, count = Counter(), Counter(), [], 0
        for dataset in inputs:
            for name in sorted(dataset.databases)[: args.limit]:
                marks = [(time.perf_counter(), time.process_time())]
                source = load_source(config, dataset, name)
                marks.append((time.perf_counter(), time.process_time()))
                db = normalize(source, "oracle")
                marks.append((time.perf_counter(), time.process_time()))
                write_files(db, config.normalized_dir)
                marks.append((time.perf_counter(), time.process_time()))
                check_database_ddl(oracle, db)
                marks.append((time.perf_counter(), time.process_time()))
                for phase, (a, b) in zip(PHASES, zip(marks, marks[1:])):
                    wall[phase] += b[0] - a[0]
                    cpu[phase] += b[1] - a[1]
                slowest.append((marks[-1][1] - marks[1][1], dataset.source, name))
                count += 1
    print(f"{count} databases")
    for phase in PHASES:
        print(f"  {phase:10s} {wall[phase]:8.1f} s wall {cpu[phase]:8.1f} s CPU")
    emit_wall = sum(wall[p] for p in PHASES[1:])
    emit_cpu = sum(cpu[p] for p in PHASES[1:])
    print(f"emission + static checks: {emit_wall:.1f} s wall, {emit_cpu:.1f} s CPU (goal ≤ 20 s)")
    print(f"baseline, reading the sources alone: {wall['read']:.1f} s wall, {cpu['read']:.1f} s CPU")
    print("costliest databases (CPU s, without reading):")
    for seconds, source, name in sorted(slowest, reverse=True)[:5]:
        print(f"  {source}.{name}: {seconds:.1f}")


if __name__ == "__main__":
    main()
