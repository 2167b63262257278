"""Execution validation assets, one per dialect: replay (`replay_validation_<dialect>`) and the
value round trip (`roundtrip_<dialect>`), each named in full so the graph's nodes say which is which.

One asset per dialect rather than one asset with dialect partitions: the release
needs both in the same run, and an in-process run cannot mix partitioned and
unpartitioned assets. Selecting `replay_validation_postgres` reruns one dialect
alone, reusing the stored upstream stages.
"""

from collections import Counter

import dagster as dg

from assets.versions import content_versioned
from pipelines.resources import EnginesResource
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.dialects import of_dialect
from plbench.mbpp.stages import ReplayReport, RoundTripReport, StageOutput, replay_stage, roundtrip_stage

GROUP = "validation"


def _replay_asset(dialect: str):
    @dg.asset(
        key=f"replay_validation_{dialect}",
        group_name=GROUP,
        kinds={dialect},
        description=f"Replay and mutation checks of every task's {dialect} test block on a real server.",
    )
    @content_versioned
    def replay(
        context: dg.AssetExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        engines: EnginesResource,
        mbpp_tasks: StageOutput,
    ) -> ReplayReport:
        with engines.open(dialect) as engine:
            report = replay_stage(mbpp_tasks, engine, build.workers)
        count_in = len(of_dialect(mbpp_tasks.items, dialect))
        meta = {"ran": report.ran, "count_in": count_in, "seconds": round(report.seconds, 2)}
        if report.ran:
            statuses = Counter(r.status for r in report.results)
            meta.update(
                {
                    "count_out": statuses["passed"],
                    "rejected": dg.MetadataValue.json(
                        dict(sorted((k, v) for k, v in statuses.items() if k != "passed"))
                    ),
                    "engine": report.engine,
                    "mutants": dg.MetadataValue.json(report.mutant_counts()),
                }
            )
        else:  # not run: every task goes on unvalidated, recorded as not_run
            meta["count_out"] = count_in
            meta["reason"] = report.reason
        context.add_output_metadata(meta)
        return report

    return replay


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
