"""What task shards cost and give back, on the raw mirror: MBPP's test-case extraction and PostgreSQL replay
run whole (the baseline, as one in-process step does) and then as N shards one after another (what an
executor with one worker does; with several, the shards run side by side), in the same run; the merged
values compared with the whole ones by their content digest (the stage's data version).

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/task_shards.py [--shards 4] [--storage DIR]

The replay reads `mbpp_tasks` from the stage storage of an earlier build (`--storage`, default this
checkout's `.cache/dagster-storage`) and runs on the server that build used (`PLBENCH_PG_DSN` or the
private one under `.cache/pgserver`). Prints wall and CPU seconds of each run, the slowest shard (the wall
time of the stage when every shard has a worker of its own, plus the split and the merge), and whether
the digests are equal.
"""

from __future__ import annotations

import argparse
import pickle
import resource
import time
from pathlib import Path

from plbench.config import BuildConfig
from plbench.content_digest import content_digest
from plbench.engines.postgres import PostgresEngine
from plbench.mbpp.stages import (
    extract_test_cases,
    extraction_shards,
    ingest,
    merge_replay,
    merge_test_cases,
    replay_part,
)
from plbench.mbpp.validation_stages import replay_stage
from plbench.shards import Shard, indexes


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run):
    """(value, wall s, CPU s of this process and its sandbox children)."""
    cpu, start = _cpu(), time.perf_counter()
    value = run()
    return value, time.perf_counter() - start, _cpu() - cpu


def compare(label: str, whole, shards: list, work, merge) -> None:
    value, wall, cpu = timed(whole)
    print(f"{label}, whole (baseline): {wall:.1f} s wall, {cpu:.1f} s CPU")
    walls: list[float] = []

    def sharded():
        parts = []
        for shard in shards:
            part, part_wall, _ = timed(lambda shard=shard: work(shard))
            parts.append(Shard(shard.index, shard.count, part))
            walls.append(part_wall)
        return merge(parts)

    merged, wall, cpu = timed(sharded)
    print(
        f"{label}, {len(shards)} shards one after another, merged: {wall:.1f} s wall, {cpu:.1f} s CPU; "
        f"shards {', '.join(f'{w:.1f}' for w in walls)} s (the slowest: the stage's wall time on a worker each)"
    )
    equal = content_digest(merged) == content_digest(value)
    print(f"{label}: the merged value {'equals' if equal else 'DIFFERS FROM'} the whole one ({content_digest(value)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--storage", type=Path, help="stage storage holding mbpp_tasks (default .cache/...)")
    args = parser.parse_args()
    config = BuildConfig.from_env()
    ingested = [ingest(config, "mbpp"), ingest(config, "mbpp_plus")]
    compare(
        "test cases",
        lambda: extract_test_cases(ingested, config),
        extraction_shards(ingested, args.shards),
        lambda shard: extract_test_cases(shard.part, config),
        lambda parts: merge_test_cases(ingested, parts),
    )
    tasks = pickle.loads(((args.storage or config.storage_dir) / "mbpp_tasks").read_bytes())
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, config.statement_timeout_s)
    try:
        compare(
            "replay (postgres)",
            lambda: replay_stage(tasks, engine, config.workers),
            indexes(args.shards),
            lambda shard: replay_stage(replay_part(tasks, "postgres", shard), engine, config.workers),
            merge_replay,
        )
    finally:
        engine.close()


if __name__ == "__main__":
    main()
