"""Time the operator stages add to a build, against the MBPP stages of the same run.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/operators_time.py [--no-replay]

Reads MBPP from the raw files, runs the MBPP stages it needs (extraction, signatures) and then,
each timed: constant augmentation; ILE with the deterministic proposer; emission, replay with
mutants and round trip of the `mbpp_ile` tasks (PostgreSQL). The baseline is the MBPP tasks'
own emission, replay and round trip in the same run. Prints the figures and the ledger summary.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from plbench.config import BuildConfig
from plbench.engines.postgres import PostgresEngine
from plbench.mbpp.stages import (
    StageOutput,
    build_tasks,
    extract_test_cases,
    infer_signatures,
    ingest,
    replay_stage,
    roundtrip_stage,
)
from plbench.operators.proposers import DeterministicProposer
from plbench.operators.stages import augment_constant_tasks, ile_tasks


def timed(label: str, fn, *args):
    start = time.perf_counter()
    value = fn(*args)
    print(f"{label:44s} {time.perf_counter() - start:8.1f} s", flush=True)
    return value


def validate(config: BuildConfig, engine: PostgresEngine, typed: StageOutput, label: str) -> dict:
    tasks = timed(f"{label}: task emission", build_tasks, typed)
    replay = timed(f"{label}: replay with mutants (postgres)", replay_stage, tasks, engine, config.workers)
    roundtrip = timed(f"{label}: round trip (postgres)", roundtrip_stage, tasks, engine, config.workers)
    passed = {r.task_id for r in replay.results if r.status == "passed"}
    return {
        "emitted_postgres": sum(a.dialect == "postgres" for a in tasks.items),
        "emitted_oracle": sum(a.dialect == "oracle" for a in tasks.items),
        "replay": dict(Counter(r.status for r in replay.results)),
        "mutants": replay.mutant_counts(),
        "roundtrip": {k: v for k, v in roundtrip.counts().items() if k != "tasks_with_mismatches"},
        "replay_passed": len(passed),
    }


def main() -> None:
    replay = "--no-replay" not in sys.argv
    config = BuildConfig.from_env(subsets=("mbpp",))
    ingested = [timed("ingest mbpp", ingest, config, "mbpp")]
    extracted = timed("mbpp: test extraction", extract_test_cases, ingested, config)
    typed = timed("mbpp: signatures", infer_signatures, extracted, ingested)
    augmented = timed("constant augmentation", augment_constant_tasks, typed, ingested, config)
    rejected = [r.source_id for r in augmented.rejections]
    print(f"  constant tasks rejected: {rejected}, kept typed tasks: {len(augmented.items)}")
    ile = timed("mbpp_ile: ILE (deterministic)", ile_tasks, augmented, ingested, config, DeterministicProposer())
    print(f"  mbpp_ile enhanced: {len(ile.typed.items)} of {ile.input_count}")
    print(f"  rounds: {dict(Counter(ile.rounds.values()))}")
    print(f"  rejected: {dict(Counter(r.reason_code for r in ile.typed.rejections))}")
    print("  ledger: " + json.dumps(ile.ledger.summary(), indent=1))
    if replay:
        engine = PostgresEngine.start(config.pg_dsn, data_dir=config.pg_data_dir)
        try:
            print(json.dumps({"mbpp_ile": validate(config, engine, ile.typed, "mbpp_ile")}, indent=1))
            print(json.dumps({"mbpp (baseline)": validate(config, engine, augmented, "mbpp (baseline)")}, indent=1))
        finally:
            engine.close()


if __name__ == "__main__":
    main()
