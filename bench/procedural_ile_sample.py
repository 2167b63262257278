"""Procedural ILE (deterministic proposer) on a sample of the Spider 1.0 mirror: what the rounds make of the
seeds, and time against building the same seeds in the same run.

For each sampled database (every k-th of the mirror's, in name order): read, normalize, load into PostgreSQL,
run its gold queries, build and validate its seeds (the baseline), then up to N ILE rounds per seed. Prints
seeds, enhanced seeds and their accepted rounds, episodes of 3-5 turns, acceptance per rule template,
rejections by reason, mean statements and cyclomatic complexity per round, and seconds; then the Interactive
variants of the same seeds (plbench.interactive.stages, deterministic perturbations, each gated by execution)
by subset `interactive`'s rule (variant_sources: an enhanced seed's final round, twin its procedures_ile task;
any other seed as it is), per dialect, with the variants of final rounds and of plain seeds and the omissions
the previous round's reference proved: an upper bound of the subset, which also needs a plain seed's A1 twin.
With --plain-baseline it also perturbs every seed as it is (the rule before final rounds were perturbed) in
the same run, and prints both times.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedural_ile_sample.py [--every 32 | --databases 10]
        [--rounds 3] [--plain-baseline]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.procedures_sample import mirror_spider  # noqa: E402
from plbench.config import BuildConfig  # noqa: E402
from plbench.engines.postgres import PostgresEngine  # noqa: E402
from plbench.interactive.stages import InteractiveOutput, database_variants, ile_twins, variant_sources  # noqa: E402
from plbench.interactive.tasks import plain_source  # noqa: E402
from plbench.normalize.emit import normalize  # noqa: E402
from plbench.normalize.load import load_postgres  # noqa: E402
from plbench.normalize.sqlite_source import read_sqlite  # noqa: E402
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer  # noqa: E402
from plbench.operators.procedural_ile import ProcedureRuleProposer  # noqa: E402
from plbench.operators.procedural_stage import ProceduralIle, database_ile, summary  # noqa: E402
from plbench.procedures.seeds import database_seeds  # noqa: E402
from plbench.procedures.stages import selected_databases  # noqa: E402
from plbench.spider import gold  # noqa: E402
from plbench.spider.stages import ingest_spider1  # noqa: E402


def timed_variants(engine, pg, oracle, sources, out: InteractiveOutput) -> float:
    """Perturb `sources` into `out`; the seconds it took."""
    start = time.perf_counter()
    out.extend(database_variants(engine, pg, oracle, sources, DeterministicPerturbationProposer()))
    return time.perf_counter() - start


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
    parser.add_argument("--rounds", type=int, default=3, help="ILE rounds per seed at most")
    parser.add_argument("--plain-baseline", action="store_true", help="also perturb every seed as it is, timed")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    root, queries, every_name = mirror_spider(config)
    if args.databases:
        names = selected_databases(ingest_spider1(config).databases, args.databases)[0]
    else:
        names = every_name[:: args.every]
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    stage = ProceduralIle(executed=("postgres",), rounds=args.rounds)
    interactive, plain = InteractiveOutput(), InteractiveOutput()
    seeds_s, ile_s, interactive_s, plain_s = 0.0, 0.0, 0.0, 0.0
    for name in names:
        path = root / "database" / name / f"{name}.sqlite"
        source = read_sqlite(path, "spider1", name, str(path))
        pg, oracle = normalize(source, "postgres"), normalize(source, "oracle")
        start = time.perf_counter()
        with engine.connection() as conn:
            if not load_postgres(conn, pg).verified:
                continue
        with engine.session(reads=(pg.schema_name,)) as session:
            equivalence = gold.check_database(path, pg, [q for q in queries if q.db_id == name], session, oracle)
        seeds = database_seeds(engine, pg, oracle, equivalence)
        middle = time.perf_counter()
        db = database_ile(engine, pg, oracle, seeds.seeds, ProcedureRuleProposer(), args.rounds)
        seeds_s += middle - start
        ile_s += time.perf_counter() - middle
        stage.databases.append(db)
        interactive_s += timed_variants(engine, pg, oracle, variant_sources(seeds.seeds, ile_twins([db])), interactive)
        if args.plain_baseline:
            plain_s += timed_variants(engine, pg, oracle, [plain_source(v) for v in seeds.seeds], plain)
        print(f"{name}: {len(seeds.seeds)} seeds, {len(db.enhanced)} enhanced", flush=True)
    stage.seconds = ile_s
    section = summary(stage)
    ledger = stage.ledger
    by_rule = Counter((e.rule_id, e.verdict) for e in ledger.entries)
    enhanced = [e for db in stage.databases for e in db.enhanced]
    print(f"\ndatabases: {len(names)} sampled; seeds {section['seeds']}, enhanced {section['enhanced']}")
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
    print(f"load + gold check + seeds (baseline): {seeds_s:7.1f} s")
    print(f"ILE ({args.rounds} rounds at most): {ile_s:7.1f} s ({ile_s / max(seeds_s, 1e-9):.1f}x)")
    print_variants("interactive variants (final rounds of enhanced seeds)", interactive, interactive_s, seeds_s)
    if args.plain_baseline:
        print_variants("interactive variants (every seed plain, the old rule)", plain, plain_s, seeds_s)
        print(f"final rounds vs plain: {interactive_s - plain_s:+.1f} s")
    engine.close()


if __name__ == "__main__":
    main()
