"""The procedures subset on a sample of the Spider 1.0 mirror: figures per scenario, and time against the
normalize-load-verify work of the same databases in the same run.

For each sampled database (every k-th of the mirror's, in name order; or, with --databases N, the N the
build takes with PLBENCH_PROCEDURE_DATABASES=N): read, normalize, load into
PostgreSQL and run its gold queries (the baseline: what the build does before procedures), then seeds,
call suites, mutants and every scenario adapter. Prints seeds validated, tasks per scenario and dialect,
rejections by reason, mutants killed / total per scenario, and seconds: the baseline's and the procedures'
split into phases (explore: the candidate calls' run; record: the recorded and determinism runs;
mutants: mutants and trivial candidates; strengthen; scenarios: the adapters), each with its round trips
to the server, and the full mirror's procedures time projected from the sample's share of databases.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedures_sample.py [--every 8 | --databases 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.normalize.emit import normalize  # noqa: E402
from plbench.normalize.load import load_postgres  # noqa: E402
from plbench.normalize.sqlite_source import read_sqlite  # noqa: E402
from plbench.procedures import build, seeds, strength, suites  # noqa: E402
from plbench.procedures.stages import selected_databases  # noqa: E402
from plbench.spider import gold  # noqa: E402
from plbench.spider.stages import ingest_spider1  # noqa: E402

PHASES = {
    "explore": (seeds, "build_suite"),
    "record": (suites, "record_suite"),
    "mutants": (seeds, "measure"),
    "strengthen": (seeds, "strengthen"),
    "scenarios": (build, "seed_tasks"),
}


class Phases:
    """Seconds and round trips per phase, exclusive of the phases nested in it (record inside explore, ...)."""

    def __init__(self):
        self.seconds, self.trips, self.stack, self.total_trips = Counter(), Counter(), [], 0
        for name, (module, attr) in PHASES.items():
            setattr(module, attr, self._timed(name, getattr(module, attr)))
        strength.record_suite = suites.record_suite  # strengthen re-records through the same timer
        execute = psycopg.Connection.execute

        def counted(conn, *a, **kw):
            self.total_trips += 1
            return execute(conn, *a, **kw)

        psycopg.Connection.execute = counted

    def _timed(self, name, function):
        def timed(*args, **kwargs):
            self.stack.append([time.perf_counter(), self.total_trips, 0.0, 0])
            try:
                return function(*args, **kwargs)
            finally:
                start, trips, inner_s, inner_trips = self.stack.pop()
                spent, made = time.perf_counter() - start, self.total_trips - trips
                self.seconds[name] += spent - inner_s
                self.trips[name] += made - inner_trips
                if self.stack:
                    self.stack[-1][2] += spent
                    self.stack[-1][3] += made

        return timed


def mirror_spider(config: BuildConfig) -> tuple[Path, list, list[str]]:
    """The mirror's Spider folder, its train and dev gold queries, and the databases it has, by name."""
    if config.raw_dir is None:
        raise SystemExit("set PLBENCH_RAW_DIR to the raw mirror")
    root = config.raw_dir / "spider"
    queries = gold.read_train_gold(root / "train_gold.sql") + gold.read_spider_dev(
        root / "dev.json", root / "dev_gold.sql"
    )
    return root, queries, sorted(p.name for p in (root / "database").iterdir() if (p / f"{p.name}.sqlite").exists())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=8, help="take every k-th database")
    parser.add_argument("--databases", type=int, help="take the databases the build takes with this cap")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    root, queries, every_name = mirror_spider(config)
    if args.databases:
        names = selected_databases(ingest_spider1(config).databases, args.databases)[0]
    else:
        names = every_name[:: args.every]
    phases = Phases()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    seeds, tasks, rejected, kills = 0, Counter(), Counter(), Counter()
    with_seeds, load_s, build_s, build_trips = 0, 0.0, 0.0, 0
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
        middle, trips = time.perf_counter(), phases.total_trips
        out = build.database_procedures(engine, pg, oracle, equivalence)
        build_s += time.perf_counter() - middle
        build_trips += phases.total_trips - trips
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
    for name in PHASES:
        print(f"  {name:11s} {phases.seconds[name]:7.1f} s  {phases.trips[name]:7d} round trips")
    rest_trips = build_trips - sum(phases.trips.values())
    print(f"  {'other':11s} {build_s - sum(phases.seconds.values()):7.1f} s  {rest_trips:7d} round trips")
    print(
        f"projected on the mirror's {len(every_name)} databases: "
        f"{build_s * len(every_name) / len(names) / 60:.1f} min of procedures"
    )
    engine.close()


if __name__ == "__main__":
    main()
