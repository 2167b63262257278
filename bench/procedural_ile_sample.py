"""Procedural ILE (deterministic proposer) on a sample of the Spider 1.0 mirror: what the rounds make of the
seeds, and time against building the same seeds in the same run.

For each sampled database (every k-th of the mirror's, in name order): read, normalize, load into PostgreSQL,
run its gold queries; then, stage by stage as the build runs them (`--workers N` databases side by side, one
engine, threads: plbench.procedures.parallel, as BuildConfig.procedure_workers does): build and validate its
seeds (the baseline), up to N ILE rounds per seed (plbench.operators.procedural_stage.build_ile, the build's
function), and the Interactive variants (`--interactive-workers`, default `--workers`). Prints seeds, enhanced
seeds and their accepted rounds, episodes of 3-5 turns, acceptance per rule template, rejections by reason,
mean statements and cyclomatic complexity per round, and seconds and round trips per stage (counted exactly
with one worker); then the Interactive variants of the same seeds (plbench.interactive.stages, deterministic
perturbations, each gated by execution) by subset
`interactive`'s rule (variant_sources: an enhanced seed's final round, twin its procedures_ile task; any other
seed as it is), per dialect, with the variants of final rounds and of plain seeds and the omissions the
previous round's reference proved: an upper bound of the subset, which also needs a plain seed's A1 twin.
With --plain-baseline it also perturbs every seed as it is (the rule before final rounds were perturbed) in
the same run, and prints both times. The last line projects ILE + interactive onto the mirror's databases.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedural_ile_sample.py
        [--every 32 | --databases 10 | --names a,b]
        [--rounds 3] [--workers 2] [--plain-baseline] [--dump out.json]

`--dump` writes every enhanced seed (each version's suite and strength, clauses, rules), procedures_ile task,
multiturn turn, rejection, ledger entry and Interactive row of the sample as JSON, and `--compare` prints where
two such dumps differ (by id; bench/procedures_sample.compare), so a change to ILE or the perturbations can
show its output is the same.
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

from bench.procedures_sample import STRENGTH_FIELDS, compare, load, mirror_spider  # noqa: E402
from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.interactive.stages import InteractiveOutput, database_variants, ile_twins, variant_sources  # noqa: E402
from plbench.interactive.tasks import plain_source  # noqa: E402
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer  # noqa: E402
from plbench.operators.procedural_ile import ProcedureRuleProposer  # noqa: E402
from plbench.operators.procedural_stage import build_ile, summary  # noqa: E402
from plbench.procedures.parallel import each_database  # noqa: E402
from plbench.procedures.seeds import database_seeds  # noqa: E402
from plbench.procedures.stages import selected_databases  # noqa: E402
from plbench.spider.stages import ingest_spider1  # noqa: E402
from plbench.taskrow import as_record  # noqa: E402


def _json(value):
    return json.loads(json.dumps(value, default=str))


def _version(v) -> dict:
    strength = {k: getattr(v.strength, k) for k in STRENGTH_FIELDS}
    return {"reference": v.seed.procedure.render("postgres"), "suite": v.suite.to_json(v.seed), "strength": strength}


def dumped_ile(stage) -> dict:
    """procedural ILE's output by id: enhanced seeds (every version), tasks, turns, rejections, the ledger."""
    found = {}
    for db in stage.databases:
        for e in db.enhanced:
            history = [_version(v) for v in e.history]
            found[f"enhanced {e.history[0].seed.seed_id}"] = {
                "rules": e.rules,
                "clauses": e.clauses,
                "history": history,
            }
        for t in db.tasks:
            found[f"task {t.task_id} {t.dialect}"] = {k: v for k, v in dataclasses.asdict(t).items() if k != "measured"}
        for t in db.turns:
            found[f"turn {t.task.task_id} {t.task.dialect}"] = dataclasses.asdict(t)
        for r in db.rejections + db.multiturn_rejections:
            found.setdefault(f"rejection {r.subset} {r.source_id} {r.stage}", []).append([r.reason_code, r.detail])
        found[f"ledger {db.database}"] = [dataclasses.asdict(e) for e in db.ledger.entries]
        found[f"reference_failures {db.database}"] = db.reference_failures
    return _json(found)


def dumped_interactive(out: InteractiveOutput) -> dict:
    found = {f"row {r.task_id} {r.dialect}": as_record(r) for r in out.rows}
    for r in out.rejections:
        found.setdefault(f"rejection {r.subset} {r.source_id} {r.stage}", []).append([r.reason_code, r.detail])
    found["ledger interactive"] = [dataclasses.asdict(e) for e in out.ledger.entries]
    return _json(found)


class Trips:
    """Round trips to the server (psycopg Connection.execute calls), counted from here on."""

    def __init__(self):
        self.count, execute = 0, psycopg.Connection.execute

        def counted(conn, *args, **kwargs):
            self.count += 1
            return execute(conn, *args, **kwargs)

        psycopg.Connection.execute = counted

    def since(self, mark: int) -> str:
        return f"{self.count - mark} round trips"


def timed_variants(engine, jobs, workers: int) -> tuple[InteractiveOutput, float]:
    """Every (pg, oracle, sources) of `jobs` perturbed, `workers` databases side by side; and the seconds."""
    start = time.perf_counter()
    out = InteractiveOutput()
    proposer = DeterministicPerturbationProposer()
    for part in each_database(lambda job: database_variants(engine, *job, proposer), jobs, workers):
        out.extend(part)
    return out, time.perf_counter() - start


def print_variants(label: str, out: InteractiveOutput, seconds: float, baseline: float) -> None:
    variants = out.summary()
    print(f"{label}: per dialect {variants['tasks']}; of {variants['variants_of']}")
    print(f"  omissions proven by the previous round's reference: {variants['omissions_proven_by_previous_round']}")
    print(f"  hidden facts by op {variants['hidden_facts_by_op']}; rejected by reason {variants['rejected']}")
    print(f"  seconds: {seconds:7.1f} ({seconds / max(baseline, 1e-9):.1f}x the baseline)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=32, help="take every k-th database")
    parser.add_argument("--databases", type=int, help="take the databases the build takes with this cap")
    parser.add_argument("--names", help="take these databases (comma-separated)")
    parser.add_argument("--rounds", type=int, default=3, help="ILE rounds per seed at most")
    parser.add_argument("--workers", type=int, default=1, help="databases built side by side (seeds, ILE)")
    parser.add_argument("--interactive-workers", type=int, help="databases perturbed side by side (--workers)")
    parser.add_argument("--plain-baseline", action="store_true", help="also perturb every seed as it is, timed")
    parser.add_argument("--dump", help="write the sample's ILE and Interactive output to this JSON file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two dumps, then stop")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    config = BuildConfig.from_env()
    root, queries, every_name = mirror_spider(config)
    if args.names:
        names = args.names.split(",")
    elif args.databases:
        names = selected_databases(ingest_spider1(config).databases, args.databases)[0]
    else:
        names = every_name[:: args.every]
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    loaded = {name: db for name in names if (db := load(engine, root, queries, name)) is not None}
    trips = Trips()
    start = time.perf_counter()
    found = each_database(lambda name: database_seeds(engine, *loaded[name]), list(loaded), args.workers)
    seeds = dict(zip(loaded, found))
    seeds_s, seeds_trips = time.perf_counter() - start, trips.since(0)
    mark = trips.count
    stage = build_ile(
        seeds, lambda name: loaded[name][:2], engine, ProcedureRuleProposer(), args.rounds, None, args.workers
    )
    ile_s, ile_trips, mark = stage.seconds, trips.since(mark), trips.count
    twins = ile_twins(stage.databases)
    jobs = [(*loaded[n][:2], variant_sources(s.seeds, twins)) for n, s in seeds.items() if s.seeds]
    interactive_workers = args.interactive_workers or args.workers
    interactive, interactive_s = timed_variants(engine, jobs, interactive_workers)
    interactive_trips = trips.since(mark)
    section = summary(stage)
    ledger = stage.ledger
    by_rule = Counter((e.rule_id, e.verdict) for e in ledger.entries)
    enhanced = [e for db in stage.databases for e in db.enhanced]
    print(f"\ndatabases: {len(names)} sampled, {len(loaded)} loaded; seeds {section['seeds']}")
    print(f"enhanced {section['enhanced']}")
    print(f"enhanced with >= 2 accepted rounds: {sum(e.rounds >= 2 for e in enhanced)}; rounds {section['rounds']}")
    print(f"episodes of 3-5 turns: {section['episodes']}")
    for rule in sorted({r for r, _ in by_rule}):
        accepted, total = by_rule[(rule, "accepted")], by_rule[(rule, "accepted")] + by_rule[(rule, "rejected")]
        print(f"{rule:22s} accepted {accepted:4d} / proposed {total:4d}")
    print("rejected by reason:", ledger.summary().get("ile_procedures", {}).get("rejected_by_reason"))
    for i, r in section["per_round"].items():
        print(
            f"round {i}: {r['references']} references, statements {r['statements_mean']}, "
            f"cyclomatic {r['cyclomatic_mean']}"
        )
    print(f"seeds (baseline), {args.workers} worker(s): {seeds_s:7.1f} s, {seeds_trips}")
    ratio = ile_s / max(seeds_s, 1e-9)
    print(f"ILE ({args.rounds} rounds at most), {args.workers} worker(s): {ile_s:7.1f} s ({ratio:.1f}x), {ile_trips}")
    label = f"interactive variants (final rounds of enhanced seeds), {interactive_workers} worker(s)"
    print_variants(label, interactive, interactive_s, seeds_s)
    print(f"  {interactive_trips}")
    if args.plain_baseline:
        plain_jobs = [(*loaded[n][:2], [plain_source(v) for v in s.seeds]) for n, s in seeds.items() if s.seeds]
        plain, plain_s = timed_variants(engine, plain_jobs, interactive_workers)
        print_variants("interactive variants (every seed plain, the old rule)", plain, plain_s, seeds_s)
        print(f"final rounds vs plain: {interactive_s - plain_s:+.1f} s")
    total = ile_s + interactive_s
    print(
        f"ILE + interactive: {total:7.1f} s; projected on the mirror's {len(every_name)} databases: "
        f"{total * len(every_name) / len(names) / 60:.1f} min"
    )
    if args.dump:
        Path(args.dump).write_text(json.dumps({**dumped_ile(stage), **dumped_interactive(interactive)}, sort_keys=True))
    engine.close()


if __name__ == "__main__":
    main()
