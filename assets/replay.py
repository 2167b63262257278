"""Execution validation assets, one per dialect: replay (`replay_validation_<dialect>`) and the
value round trip (`roundtrip_<dialect>`), each named in full so the graph's nodes say which is which.

One asset per dialect rather than one asset with dialect partitions: the release
needs both in the same run, and an in-process run cannot mix partitioned and
unpartitioned assets. Selecting `replay_validation_postgres` reruns one dialect
alone, reusing the stored upstream stages. Replay is task-sharded (assets/sharded.py): each shard a step, which
the workers of a multiprocess, celery or Kubernetes executor run side by side.
"""

from collections import Counter

import dagster as dg

from assets.sharded import shard_outputs
from assets.versions import content_versioned
from pipelines.resources import EnginesResource
from pipelines.storage import drop_step_outputs
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.dialects import of_dialect
from plbench.mbpp.stages import (
    ReplayReport,
    RoundTripReport,
    StageOutput,
    merge_replay,
    replay_shards,
    replay_stage,
    roundtrip_stage,
)
from plbench.shards import Shard

GROUP = "validation"


def _replay_asset(dialect: str):
    name = f"replay_validation_{dialect}"

    # The count of tasks goes to the merge beside the shards: the merge need not load mbpp_tasks again for it
    # (the mirror's: 54 MB, 0.56-0.75 s to unpickle).
    @dg.op(name=f"{name}_shards", out={"shards": dg.DynamicOut(Shard), "count_in": dg.Out(int)})
    def shards(context: dg.OpExecutionContext, build: dg.ResourceParam[BuildConfig], mbpp_tasks: StageOutput):
        yield dg.Output(len(of_dialect(mbpp_tasks.items, dialect)), "count_in")
        yield from shard_outputs(context, replay_shards(mbpp_tasks, dialect, build.shard_count), "shards")

    @dg.op(name=f"{name}_shard")
    def replay_shard(build: dg.ResourceParam[BuildConfig], engines: EnginesResource, shard: Shard) -> Shard:
        with engines.open(dialect) as engine:
            return Shard(shard.index, shard.count, replay_stage(shard.part, engine, build.workers))

    @dg.op(name=f"{name}_merge")
    @content_versioned
    def merge(
        context: dg.OpExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        count_in: int,
        shards: list[Shard],
    ) -> ReplayReport:
        report = merge_replay(shards)
        drop_step_outputs(build.storage_dir, context.run_id, name)
        context.add_output_metadata(_replay_metadata(report, count_in, len(shards)))
        return report

    @dg.graph_asset(
        key=name,
        group_name=GROUP,
        kinds={dialect},
        description=f"Replay and mutation checks of every task's {dialect} test block on a real server "
        "(in task shards, each a step: PLBENCH_TASK_SHARDS).",
    )
    def replay(mbpp_tasks: StageOutput) -> ReplayReport:
        parts, count_in = shards(mbpp_tasks)
        return merge(count_in, parts.map(replay_shard).collect())

    return replay


def _replay_metadata(report: ReplayReport, count_in: int, shards: int) -> dict:
    meta = {"ran": report.ran, "count_in": count_in, "seconds": round(report.seconds, 2), "shards": shards}
    if not report.ran:  # not run: every task goes on unvalidated, recorded as not_run
        return meta | {"count_out": count_in, "reason": report.reason}
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
