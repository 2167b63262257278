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
Every sampled database is loaded first; then `--workers N` builds N databases side by side (one engine,
threads: plbench.procedures.parallel), timed as a whole (the phases are told apart with one worker only).

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedures_sample.py [--every 8 | --databases 10] [--workers 2]
        [--dump out.json]

`--dump` writes every seed (suite and strength), task and rejection of the sample as JSON, and `--compare`
prints where two such dumps differ (by id), so a change to the build can show its output is the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
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
from plbench.procedures.parallel import each_database  # noqa: E402
from plbench.procedures.scenarios.b2 import timing_summary  # noqa: E402
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
STRENGTH_FIELDS = ("total", "killed", "by_operator", "survivors", "trivial_passed")


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


def _dumped(out) -> dict:
    """One database's output by id: its seeds (suite and strength), tasks and rejections, as JSON values."""
    found = {}
    for v in out.seeds.seeds:
        strength = {k: getattr(v.strength, k) for k in STRENGTH_FIELDS}
        found[f"seed {v.seed.seed_id}"] = {"suite": v.suite.to_json(v.seed), "strength": strength}
    for t in out.tasks:
        found[f"task {t.task_id} {t.dialect}"] = {k: v for k, v in dataclasses.asdict(t).items() if k != "measured"}
    for r in out.seeds.rejections + out.rejections:
        found.setdefault(f"rejection {r.source_id} {r.stage}", []).append([r.reason_code, r.detail])
    return json.loads(json.dumps(found, default=str))


def compare(before_path: str, after_path: str) -> None:
    before, after = (json.loads(Path(p).read_text()) for p in (before_path, after_path))
    kinds = Counter(k.split()[0] for k in before)
    print(f"{before_path}: {dict(kinds)}; {after_path}: {dict(Counter(k.split()[0] for k in after))}")
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            print(f"differs: {key}\n  before: {str(before.get(key))[:300]}\n  after:  {str(after.get(key))[:300]}")


def load(engine, root: Path, queries: list, name: str):
    """(pg, oracle, equivalence) of one mirror database, normalized, loaded and gold-checked; None when its
    rows do not verify."""
    path = root / "database" / name / f"{name}.sqlite"
    source = read_sqlite(path, "spider1", name, str(path))
    pg, oracle = normalize(source, "postgres"), normalize(source, "oracle")
    with engine.connection() as conn:
        if not load_postgres(conn, pg).verified:
            return None
    with engine.session(reads=(pg.schema_name,)) as session:
        return pg, oracle, gold.check_database(path, pg, [q for q in queries if q.db_id == name], session, oracle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=8, help="take every k-th database")
    parser.add_argument("--databases", type=int, help="take the databases the build takes with this cap")
    parser.add_argument("--workers", type=int, default=1, help="databases built side by side (phases: only 1)")
    parser.add_argument("--dump", help="write the sample's seeds, tasks and rejections to this JSON file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two dumps, then stop")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    config = BuildConfig.from_env()
    root, queries, every_name = mirror_spider(config)
    if args.databases:
        names = selected_databases(ingest_spider1(config).databases, args.databases)[0]
    else:
        names = every_name[:: args.every]
    phases = Phases()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    start = time.perf_counter()
    loaded = [(name, db) for name in names if (db := load(engine, root, queries, name)) is not None]
    load_s, trips = time.perf_counter() - start, phases.total_trips
    start = time.perf_counter()

    def built(item):
        began = time.perf_counter()
        out = build.database_procedures(engine, *item[1])
        seconds = time.perf_counter() - began
        print(f"{item[0]}: {len(out.seeds.seeds)} seeds, {len(out.tasks)} tasks, {seconds:.1f} s", flush=True)
        return out

    outs = each_database(built, loaded, args.workers)
    build_s, build_trips = time.perf_counter() - start, phases.total_trips - trips
    seeds, tasks, rejected, kills, with_seeds, dumped = 0, Counter(), Counter(), Counter(), 0, {}
    for out in outs:
        dumped.update(_dumped(out) if args.dump else {})
        seeds += len(out.seeds.seeds)
        with_seeds += bool(out.seeds.seeds)
        rejected.update(r.reason_code for r in out.seeds.rejections + out.rejections)
        for t in out.tasks:
            tasks[(t.scenario, t.dialect)] += 1
            kills[(t.scenario, "total")] += t.mutants_total
            kills[(t.scenario, "killed")] += t.mutants_killed
    print(f"\ndatabases: {len(names)} sampled, {len(loaded)} loaded, {with_seeds} with seeds; seeds validated: {seeds}")
    for scenario in sorted({s for s, _ in tasks}):
        total, killed = kills[(scenario, "total")], kills[(scenario, "killed")]
        print(
            f"{scenario}: postgres {tasks[(scenario, 'postgres')]:5d}  oracle {tasks[(scenario, 'oracle')]:5d}  "
            f"mutants killed {killed}/{total} ({killed / total:.1%})"
        )
    print("rejections:", dict(rejected.most_common()))
    print("B2 speedups measured (information, not a verdict):", timing_summary([t for o in outs for t in o.tasks]))
    print(f"normalize + load + gold check (baseline, serial): {load_s:7.1f} s")
    print(
        f"procedures (seeds, suites, mutants, scenarios), {args.workers} worker(s): {build_s:7.1f} s "
        f"({build_s / max(load_s, 1e-9):.1f}x), {build_trips} round trips"
    )
    if args.workers == 1:
        for name in PHASES:
            print(f"  {name:11s} {phases.seconds[name]:7.1f} s  {phases.trips[name]:7d} round trips")
        rest_trips = build_trips - sum(phases.trips.values())
        print(f"  {'other':11s} {build_s - sum(phases.seconds.values()):7.1f} s  {rest_trips:7d} round trips")
    print(
        f"projected on the mirror's {len(every_name)} databases: "
        f"{build_s * len(every_name) / len(names) / 60:.1f} min of procedures"
    )
    if args.dump:
        Path(args.dump).write_text(json.dumps(dumped, sort_keys=True))
    engine.close()


if __name__ == "__main__":
    main()
