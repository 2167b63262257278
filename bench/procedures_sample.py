"""The procedures subset on a sample of the Spider 1.0 mirror: figures per scenario, and time against the
normalize-load-verify work of the same databases in the same run.

For each sampled database (every k-th of the mirror's, in name order): read, normalize, load into
PostgreSQL and run its gold queries (the baseline: what the build does before procedures), then seeds,
call suites, mutants and every scenario adapter. Prints seeds validated, tasks per scenario and dialect,
rejections by reason, mutants killed / total per scenario, and seconds.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedures_sample.py [--every 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.normalize.emit import normalize  # noqa: E402
from plbench.normalize.load import load_postgres  # noqa: E402
from plbench.normalize.sqlite_source import read_sqlite  # noqa: E402
from plbench.procedures.build import database_procedures  # noqa: E402
from plbench.spider import gold  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=8, help="take every k-th database")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    if config.raw_dir is None:
        raise SystemExit("set PLBENCH_RAW_DIR to the raw mirror")
    root = config.raw_dir / "spider"
    queries = gold.read_train_gold(root / "train_gold.sql") + gold.read_spider_dev(
        root / "dev.json", root / "dev_gold.sql"
    )
    names = sorted(p.name for p in (root / "database").iterdir() if (p / f"{p.name}.sqlite").exists())[:: args.every]
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    seeds, tasks, rejected, kills = 0, Counter(), Counter(), Counter()
    with_seeds, load_s, build_s = 0, 0.0, 0.0
    for name in names:
        start = time.perf_counter()
        path = root / "database" / name / f"{name}.sqlite"
        source = read_sqlite(path, "spider1", name, str(path))
        pg, oracle = normalize(source, "postgres"), normalize(source, "oracle")
        with engine.connection() as conn:
            if not load_postgres(conn, pg).verified:
                continue
        with engine.session(reads=(pg.schema_name,)) as session:
            equivalence = gold.check_database(path, pg, [q for q in queries if q.db_id == name], session, oracle)
        middle = time.perf_counter()
        out = database_procedures(engine, pg, oracle, equivalence)
        build_s += time.perf_counter() - middle
        load_s += middle - start
        seeds += len(out.seeds.seeds)
        with_seeds += bool(out.seeds.seeds)
        rejected.update(r.reason_code for r in out.seeds.rejections + out.rejections)
        for t in out.tasks:
            tasks[(t.scenario, t.dialect)] += 1
            kills[(t.scenario, "total")] += t.mutants_total
            kills[(t.scenario, "killed")] += t.mutants_killed
        print(f"{name}: {len(out.seeds.seeds)} seeds, {len(out.tasks)} tasks", flush=True)
    print(f"\ndatabases: {len(names)} sampled, {with_seeds} with seeds; seeds validated: {seeds}")
    for scenario in sorted({s for s, _ in tasks}):
        total, killed = kills[(scenario, "total")], kills[(scenario, "killed")]
        print(
            f"{scenario}: postgres {tasks[(scenario, 'postgres')]:5d}  oracle {tasks[(scenario, 'oracle')]:5d}  "
            f"mutants killed {killed}/{total} ({killed / total:.1%})"
        )
    print("rejections:", dict(rejected.most_common()))
    print(f"normalize + load + gold check (baseline): {load_s:7.1f} s")
    print(f"procedures (seeds, suites, mutants, scenarios): {build_s:7.1f} s ({build_s / max(load_s, 1e-9):.1f}x)")
    engine.close()


if __name__ == "__main__":
    main()
