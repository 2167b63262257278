"""The one Definitions object of the plbench code location (what `dagster dev` loads)."""

import dagster as dg

from assets import crosscheck, mbpp, release, replay, spider
from pipelines.resources import engines_resource, llm_resource
from pipelines.storage import StageStorage
from plbench.config import BuildConfig

REBUILD_JOB = "rebuild_release"


def build_definitions(config: BuildConfig) -> dg.Definitions:
    assets = [
        mbpp.mbpp_raw,
        mbpp.mbpp_plus_raw,
        mbpp.mbpp_test_cases,
        mbpp.mbpp_signatures,
        mbpp.mbpp_tasks,
        mbpp.plsql_types,
        *replay.replay_assets.values(),
        *replay.roundtrip_assets.values(),
        spider.spider1_raw,
        spider.spider2_lite_raw,
        *spider.normalized_assets.values(),
        spider.normalization_report,
        spider.spider_plsql_tasks,
        spider.spider2_tasks,
        release.release_tables,
        crosscheck.crosscheck_candidates,
        crosscheck.crosscheck,
        release.release,
    ]
    return dg.Definitions(
        assets=assets,
        asset_checks=[
            mbpp.mbpp_tasks_reconcile,
            *replay.replay_checks,
            spider.databases_loaded,
            spider.gold_equivalence_floor,
            release.quality_suites,
        ],
        jobs=[
            dg.define_asset_job(
                REBUILD_JOB,
                selection=dg.AssetSelection.all(),
                description="Rebuild the release from raw sources, every stage.",
            )
        ],
        resources={
            "build": config,
            "engines": engines_resource(config),
            "llm": llm_resource(config),
            "io_manager": StageStorage(base_dir=str(config.storage_dir)),
        },
    )


defs = build_definitions(BuildConfig.from_env())
