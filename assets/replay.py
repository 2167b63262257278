"""Execution validation assets, one per dialect: replay (`replay_validation_<dialect>`) and the
value round trip (`roundtrip_<dialect>`), each named in full so the graph's nodes say which is which.

One asset per dialect rather than one asset with dialect partitions: the release
needs both in the same run, and an in-process run cannot mix partitioned and
unpartitioned assets. Selecting `replay_validation_postgres` reruns one dialect
alone, reusing the stored upstream stages. Replay is task-sharded (assets/sharded.py): each shard a step, which
the workers of a multiprocess, celery or Kubernetes executor run side by side.
"""

from collections import Counter
from dataclasses import replace

import dagster as dg

from assets.sharded import shard_outputs
from assets.versions import content_versioned
from pipelines.resources import EnginesResource
from pipelines.storage import drop_step_outputs
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.mbpp.stages import (
    ReplayReport,
    RoundTripReport,
    StageOutput,
    merge_replay,
    replay_part,
)
from plbench.mbpp.validation_stages import replay_stage, roundtrip_stage
from plbench.shards import Shard, indexes

GROUP = "validation"


def _replay_asset(dialect: str):
    name = f"replay_validation_{dialect}"

    # The shards name their part only, and each shard's step reads mbpp_tasks itself: in process (one shard) a
    # stored copy of the part would be 28-30 MB written and read back for nothing.
    @dg.op(name=f"{name}_shards", out=dg.DynamicOut(Shard))
    def shards(context: dg.OpExecutionContext, build: dg.ResourceParam[BuildConfig]):
        yield from shard_outputs(context, indexes(build.shard_count))

    @dg.op(name=f"{name}_shard")
    def replay_shard(
        build: dg.ResourceParam[BuildConfig], engines: EnginesResource, shard: Shard, mbpp_tasks: StageOutput
    ) -> Shard:
        with engines.open(dialect) as engine:
            return replace(shard, part=replay_stage(replay_part(mbpp_tasks, dialect, shard), engine, build.workers))

    @dg.op(name=f"{name}_merge")
    @content_versioned
    def merge(
        context: dg.OpExecutionContext, build: dg.ResourceParam[BuildConfig], shards: list[Shard]
    ) -> ReplayReport:
        report = merge_replay(shards)
        drop_step_outputs(build.storage_dir, context.run_id, name)
        context.add_output_metadata(_replay_metadata(report, len(shards)))
        return report

    @dg.graph_asset(
        key=name,
        group_name=GROUP,
        kinds={dialect},
        description=f"Replay and mutation checks of every task's {dialect} test block on a real server "
        "(in task shards, each a step: PLBENCH_TASK_SHARDS).",
    )
    def replay(mbpp_tasks: StageOutput) -> ReplayReport:
        return merge(shards().map(lambda shard: replay_shard(shard, mbpp_tasks)).collect())

    return replay


def _replay_metadata(report: ReplayReport, shards: int) -> dict:
    meta = {"ran": report.ran, "count_in": report.tasks, "seconds": round(report.seconds, 2), "shards": shards}
    if not report.ran:  # not run: every task goes on unvalidated, recorded as not_run
        return meta | {"count_out": report.tasks, "reason": report.reason}
    statuses = Counter(r.status for r in report.results)
    return meta | {
        "count_out": statuses["passed"],
        "rejected": dg.MetadataValue.json(dict(sorted((k, v) for k, v in statuses.items() if k != "passed"))),
        "engine": report.engine,
        "mutants": dg.MetadataValue.json(report.mutant_counts()),
    }


def _retention_check(dialect: str, replay_asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=replay_asset,
        name="retention_floor",
        blocking=True,
        description="Share of typed tasks that pass replay stays above the configured floor.",
    )
    def check(build: dg.ResourceParam[BuildConfig], report: ReplayReport) -> dg.AssetCheckResult:
        if not report.ran:
            return dg.AssetCheckResult(passed=True, metadata={"not_run": report.reason})
        if not report.results:  # no MBPP subset selected: nothing was replayed, nothing to hold to a floor
            return dg.AssetCheckResult(passed=True, metadata={"tasks": 0})
        passed = sum(r.status == "passed" for r in report.results)
        rate = passed / len(report.results)
        return dg.AssetCheckResult(
            passed=rate >= build.min_retention,
            metadata={"retention": rate, "floor": build.min_retention, "passed": passed},
        )

    return check


def _roundtrip_asset(dialect: str):
    @dg.asset(
        key=f"roundtrip_{dialect}",
        group_name=GROUP,
        kinds={dialect},
        description=f"Every test value as a {dialect} literal, through an identity function and back.",
    )
    @content_versioned
    def roundtrip(
        context: dg.AssetExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        engines: EnginesResource,
        mbpp_tasks: StageOutput,
    ) -> RoundTripReport:
        with engines.open(dialect) as engine:
            report = roundtrip_stage(mbpp_tasks, engine, build.workers)
        context.add_output_metadata(
            {"seconds": round(report.seconds, 2), "counts": dg.MetadataValue.json(report.counts())}
        )
        return report

    return roundtrip


replay_assets = {d: _replay_asset(d) for d in DIALECT_NAMES}
roundtrip_assets = {d: _roundtrip_asset(d) for d in DIALECT_NAMES}
replay_checks = [_retention_check(d, a) for d, a in replay_assets.items()]
