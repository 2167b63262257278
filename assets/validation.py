"""`validation_reports`: each validation stage's report as JSON under `validation/<version>/`
(plbench/validation/reports.py), written before the release so a reader can open them beside it."""

import dagster as dg

from assets.versions import content_versioned
from plbench.config import BuildConfig
from plbench.mbpp.stages import ReplayReport, RoundTripReport
from plbench.release import PreparedRelease
from plbench.spider.summary import NormalizationSummary
from plbench.validation.crosscheck import CrosscheckReport
from plbench.validation.reports import documents, write_reports

GROUP = "validation"


@dg.asset(
    group_name=GROUP,
    kinds={"json"},
    ins={
        "release_tables": dg.AssetIn(),
        "replay_postgres": dg.AssetIn(key="replay_validation_postgres"),
        "replay_oracle": dg.AssetIn(key="replay_validation_oracle"),
        "roundtrip_postgres": dg.AssetIn(key="roundtrip_postgres"),
        "roundtrip_oracle": dg.AssetIn(key="roundtrip_oracle"),
        "normalization_report": dg.AssetIn(),
        "crosscheck": dg.AssetIn(),
    },
    description="`validation/<version>/<stage>[.<dialect>].json`: what each validation stage ran, on which "
    "engine, and what failed (replay and roundtrip per dialect, normalization, crosscheck, quality).",
)
@content_versioned
def validation_reports(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    release_tables: PreparedRelease,
    replay_postgres: ReplayReport,
    replay_oracle: ReplayReport,
    roundtrip_postgres: RoundTripReport,
    roundtrip_oracle: RoundTripReport,
    normalization_report: NormalizationSummary,
    crosscheck: CrosscheckReport,
) -> dict[str, str]:
    docs = documents(
        {"oracle": replay_oracle, "postgres": replay_postgres},
        {"oracle": roundtrip_oracle, "postgres": roundtrip_postgres},
        normalization_report,
        crosscheck,
        release_tables.manifest,
    )
    version = release_tables.version(build)
    written = write_reports(build.validation_dir, version, docs)
    context.add_output_metadata(
        {
            "folder": dg.MetadataValue.path(str(build.validation_dir / version)),
            "files": dg.MetadataValue.json(written),
        }
    )
    return written
