"""The release assets: `release_tables` (rows, manifest, quality checks, in memory) and `release`
(versioned Parquet tables, manifest and dataset card, written atomically).

Two assets so the quality suites run as blocking checks between them: a release table that
fails a suite stops the build before anything is written.
"""

import dagster as dg

from plbench.config import BuildConfig
from plbench.mbpp.stages import Ingested, ReplayReport, RoundTripReport, StageOutput
from plbench.quality import check_release, failed_suites
from plbench.release import PreparedRelease, apply_crosscheck, prepare_release, publish
from plbench.spider.stages import SpiderInputs, SpiderTasks
from plbench.spider.summary import NormalizationSummary
from plbench.validation.crosscheck import CrosscheckReport
from plbench.validation.metadata import metadata_accuracy

GROUP = "release"


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    ins={
        "mbpp_raw": dg.AssetIn(),
        "mbpp_plus_raw": dg.AssetIn(),
        "mbpp_test_cases": dg.AssetIn(),
        "mbpp_signatures": dg.AssetIn(),
        "mbpp_augmented": dg.AssetIn(),
        "mbpp_tasks": dg.AssetIn(),
        "replay_postgres": dg.AssetIn(key=["replay_validation_postgres"]),
        "replay_oracle": dg.AssetIn(key=["replay_validation_oracle"]),
        "roundtrip_postgres": dg.AssetIn(key=["roundtrip_postgres"]),
        "roundtrip_oracle": dg.AssetIn(key=["roundtrip_oracle"]),
        "spider1_raw": dg.AssetIn(),
        "spider2_lite_raw": dg.AssetIn(),
        "normalization_report": dg.AssetIn(),
        "spider_plsql_tasks": dg.AssetIn(),
        "spider2_tasks": dg.AssetIn(),
    },
    description="Release rows, rejections, types, databases and manifest, reconciled, before writing.",
)
def release_tables(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    mbpp_raw: Ingested | None,
    mbpp_plus_raw: Ingested | None,
    mbpp_test_cases: StageOutput,
    mbpp_signatures: StageOutput,
    mbpp_augmented: StageOutput,
    mbpp_tasks: StageOutput,
    replay_postgres: ReplayReport,
    replay_oracle: ReplayReport,
    roundtrip_postgres: RoundTripReport,
    roundtrip_oracle: RoundTripReport,
    spider1_raw: SpiderInputs | None,
    spider2_lite_raw: SpiderInputs | None,
    normalization_report: NormalizationSummary,
    spider_plsql_tasks: SpiderTasks,
    spider2_tasks: SpiderTasks,
) -> PreparedRelease:
    ingested = [r for r in (mbpp_raw, mbpp_plus_raw) if r is not None]
    spider = [r for r in (spider1_raw, spider2_lite_raw) if r is not None]
    prepared = prepare_release(
        build,
        ingested,
        [mbpp_test_cases, mbpp_signatures, mbpp_augmented, mbpp_tasks],
        mbpp_tasks.items,
        {"postgres": replay_postgres, "oracle": replay_oracle},
        {"postgres": roundtrip_postgres, "oracle": roundtrip_oracle},
        extra_inputs=spider,
        extra_tasks=[spider_plsql_tasks, spider2_tasks],
        normalization=normalization_report,
    )
    prepared.manifest["quality"] = check_release(prepared)
    prepared.manifest["metadata_accuracy"] = metadata_accuracy(prepared.tables["tasks.parquet"][0])
    context.add_output_metadata(
        {
            "version": prepared.version,
            "rows": dg.MetadataValue.json({k: len(v[0]) for k, v in prepared.tables.items()}),
            "quality": dg.MetadataValue.json(prepared.manifest["quality"]),
        }
    )
    return prepared


@dg.asset_check(
    asset=release_tables,
    blocking=True,
    description="Every release table passes its great-expectations suite (plbench/quality_suites/) "
    "and no task's metadata is plainly wrong; otherwise nothing is written.",
)
def quality_suites(release_tables: PreparedRelease) -> dg.AssetCheckResult:
    quality = release_tables.manifest["quality"]
    failed = failed_suites(quality)
    accuracy = release_tables.manifest.get("metadata_accuracy", {})
    wrong = accuracy.get("plainly_wrong", {})
    return dg.AssetCheckResult(
        passed=not failed and not wrong,
        metadata={
            "suites": dg.MetadataValue.json(
                {k: {f: v[f] for f in ("success", "expectations", "failed")} for k, v in quality.items()}
            ),
            "failures": dg.MetadataValue.json(failed),
            "metadata_plainly_wrong": dg.MetadataValue.json(wrong),
        },
    )


@dg.asset(
    group_name=GROUP,
    kinds={"parquet"},
    deps=["validation_reports"],  # written first, so a release always has its validation reports
    description="`releases/<version>/`: the release tables as Parquet, `manifest.json`, `README.md`.",
)
def release(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    release_tables: PreparedRelease,
    crosscheck: CrosscheckReport,
) -> str:
    prepared = apply_crosscheck(release_tables, crosscheck)
    path = publish(build, prepared)
    manifest = prepared.manifest
    context.add_output_metadata(
        {
            "release_path": str(path),
            "version": manifest["version"],
            "subsets": dg.MetadataValue.json(manifest["subsets"]),
            "validation": dg.MetadataValue.json(manifest["validation"]),
        }
    )
    return str(path)
