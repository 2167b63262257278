"""Procedural ILE (deterministic proposer) on a sample of the Spider 1.0 mirror: what the rounds make of the
seeds, and time against building the same seeds in the same run.

For each sampled database (every k-th of the mirror's, in name order): read, normalize, load into PostgreSQL,
run its gold queries, build and validate its seeds (the baseline), then up to N ILE rounds per seed. Prints
seeds, enhanced seeds and their accepted rounds, episodes of 3-5 turns, acceptance per rule template,
rejections by reason, mean statements and cyclomatic complexity per round, and seconds; then the Interactive
variants of the same seeds (plbench.interactive.stages, deterministic perturbations, each gated by execution)
per dialect, an upper bound of subset `interactive`, which keeps only seeds whose A1 twin was released.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/procedural_ile_sample.py [--every 32] [--rounds 3]
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
from plbench.interactive.stages import InteractiveOutput, database_variants  # noqa: E402
from plbench.normalize.emit import normalize  # noqa: E402
from plbench.normalize.load import load_postgres  # noqa: E402
from plbench.normalize.sqlite_source import read_sqlite  # noqa: E402
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer  # noqa: E402
from plbench.operators.procedural_ile import ProcedureRuleProposer  # noqa: E402
from plbench.operators.procedural_stage import ProceduralIle, database_ile, summary  # noqa: E402
from plbench.procedures.seeds import database_seeds  # noqa: E402
from plbench.spider import gold  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=32, help="take every k-th database")
    parser.add_argument("--rounds", type=int, default=3, help="ILE rounds per seed at most")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    root, queries, every_name = mirror_spider(config)
    names = every_name[:: args.every]
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    stage = ProceduralIle(executed=("postgres",), rounds=args.rounds)
    interactive = InteractiveOutput()
    seeds_s, ile_s, interactive_s = 0.0, 0.0, 0.0
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
        middle = time.perf_counter()
        interactive.extend(database_variants(engine, pg, oracle, seeds.seeds, DeterministicPerturbationProposer()))
        interactive_s += time.perf_counter() - middle
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
    variants = interactive.summary()
    print(f"interactive variants per dialect: {variants['tasks']}; hidden facts by op {variants['hidden_facts_by_op']}")
    print(f"interactive rejected by reason: {variants['rejected']}")
    print(f"load + gold check + seeds (baseline): {seeds_s:7.1f} s")
    print(f"ILE ({args.rounds} rounds at most): {ile_s:7.1f} s ({ile_s / max(seeds_s, 1e-9):.1f}x)")
    print(f"interactive variants: {interactive_s:7.1f} s ({interactive_s / max(seeds_s, 1e-9):.1f}x)")
    engine.close()


if __name__ == "__main__":
    main()
