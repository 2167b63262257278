"""The one Definitions object of the plbench code location (what `dagster dev` loads).

Every asset carries a code version (a digest of the code it runs and of the settings it reads:
assets/versions.py) and returns its value's content digest as its data version, so the UI shows
what is stale after a change and `plbench build` runs only that (pipelines/freshness.py).
Jobs: `rebuild_release` (every stage) and one `rerun_<stage>`
per stage of `plbench validate`, so each run in the list says what it did; and one `Stage_<stage>` per
stage, the job the UI's Materialize button launches for an asset of that stage (pipelines/stages.UI_STAGES).
"""

import logging
from collections import defaultdict

import dagster as dg

from assets import (
    crosscheck,
    ile_validation,
    mbpp,
    operators,
    procedural_ile,
    procedures,
    release,
    replay,
    spider,
    validation,
)
from assets.subsets import subset_assets
from assets.versions import READS_SELECTION, code_version, config_digest
from pipelines.executors import executor_for
from pipelines.progress import progress_logger
from pipelines.resources import engines_resource, llm_resource
from pipelines.stages import (
    NAMES_THE_RELEASE,
    REBUILD_JOB,
    STAGES,
    UI_STAGES,
    rerun_job,
    stage_assets,
    ui_job,
    ui_stage_assets,
)
from pipelines.storage import StageStorage
from plbench.config import BuildConfig, NotConfigured
from plbench.subsets import SUBSETS

# sqlglot warns of every statement it reads only as an opaque Command. The stages judge those themselves (a
# static check counts a Command as a problem; the Oracle grammar gates every released Oracle text), and on a
# terminal, even under --quiet, they were 128 lines of every mirror build.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

ASSETS_BY_MODULE = {
    mbpp: [
        mbpp.mbpp_raw,
        mbpp.mbpp_plus_raw,
        mbpp.mbpp_test_cases,
        mbpp.mbpp_signatures,
        mbpp.mbpp_augmented,
        mbpp.mbpp_tasks,
    ],
    replay: [*replay.replay_assets.values(), *replay.roundtrip_assets.values()],
    operators: [operators.mbpp_ile_tasks],
    ile_validation: [ile_validation.mbpp_ile_validation],
    procedural_ile: [procedural_ile.procedural_ile],
    spider: [
        spider.spider1_raw,
        spider.spider2_lite_raw,
        *spider.normalized_assets.values(),
        spider.normalization_report,
        spider.spider_plsql_tasks,
        spider.spider2_tasks,
    ],
    procedures: procedures.ASSETS,
    release: [release.release],  # release_tables is made per build of the definitions (_assets)
    crosscheck: [crosscheck.crosscheck_candidates, crosscheck.crosscheck],
    validation: [validation.validation_reports],
}


def candidate_kinds(config: BuildConfig) -> set[str]:
    """Where the crosscheck's candidates come from, as the graph shows it: a model only when one is used."""
    uses_model = config.crosscheck_solutions is None and not isinstance(config.llm, NotConfigured)
    return {"openai"} if uses_model else {"python"}


def _versioned(module, assets: list) -> list:
    version = code_version(module.__name__)
    return dg.map_asset_specs(lambda spec: spec.replace_attributes(code_version=version), assets)


def _assets(config: BuildConfig) -> list[dg.AssetsDefinition]:
    """The hand-written assets, those made from the registered subsets' stages (assets/subsets.py),
    and `release_tables` over every registered subset, as registered now."""
    out = [a for module, assets in ASSETS_BY_MODULE.items() for a in _versioned(module, assets)]
    subsets = tuple(SUBSETS.values())
    out += subset_assets(subsets, {k.to_user_string() for a in out for k in a.keys})
    out += _versioned(release, [release.release_tables_asset(subsets)])
    kinds = candidate_kinds(config)
    out = dg.map_asset_specs(
        lambda spec: spec.replace_attributes(kinds=kinds) if spec.key.path == ["crosscheck_candidates"] else spec,
        out,
    )
    digested = subsets_digested(out, subsets)
    return dg.map_asset_specs(lambda spec: _with_settings(spec, config, digested[spec.key]), out)


def subsets_digested(assets: list[dg.AssetsDefinition], subsets: tuple) -> dict[dg.AssetKey, frozenset[str]]:
    """Per asset, the selected subsets its code version digests: of those its value goes into (those with it,
    or an asset it feeds, among their `release_inputs`; all, past every subset's inputs), the ones its own
    code or an upstream asset's asks about (assets/versions.reads_selection). The selection reaches the
    rest only through their upstream values, which the data versions follow. A partitioned asset digests
    none: a partition holds one database's value whichever subsets read it (the selection decides which
    partitions exist, assets/spider.register_database_partitions)."""
    feeding = {s.name: dg.AssetSelection.assets(*s.release_inputs).upstream().resolve(assets) for s in subsets}
    every = frozenset(feeding)
    asked = defaultdict(set)
    for spec in (spec for a in assets for spec in a.specs if READS_SELECTION in spec.metadata):
        for key in dg.AssetSelection.assets(spec.key).downstream().resolve(assets):
            asked[key] |= set(spec.metadata[READS_SELECTION])
    digested = {}
    for spec in (spec for a in assets for spec in a.specs):
        fed = frozenset(name for name, keys in feeding.items() if spec.key in keys) or every
        digested[spec.key] = frozenset() if spec.partitions_def is not None else fed & asked[spec.key]
    return digested


def _with_settings(spec: dg.AssetSpec, config: BuildConfig, subsets: frozenset[str]) -> dg.AssetSpec:
    """The code version also digests the settings the asset reads (assets/versions.config_digest)."""
    settings = config_digest(config, spec.key.to_user_string() in NAMES_THE_RELEASE, subsets)
    return spec.replace_attributes(code_version=f"{spec.code_version}-{settings}")


def _jobs() -> list:
    rerun = [
        dg.define_asset_job(
            rerun_job(stage),
            selection=dg.AssetSelection.assets(*stage_assets(stage)),
            description=f"Rerun the {stage} stage from stored upstream values (`plbench validate --stage {stage}`).",
        )
        for stage in STAGES
    ]
    from_ui = [
        dg.define_asset_job(
            ui_job(stage),
            selection=dg.AssetSelection.assets(*ui_stage_assets(stage)),
            description=f"The {stage} stage's assets, as launched from the UI (Materialize on one of them).",
        )
        for stage in UI_STAGES
    ]
    build = dg.define_asset_job(
        REBUILD_JOB, selection=dg.AssetSelection.all(), description="Rebuild the release from raw sources, every stage."
    )
    return [build, *rerun, *from_ui]


def build_definitions(config: BuildConfig) -> dg.Definitions:
    return dg.Definitions(
        executor=executor_for(config),
        assets=_assets(config),
        asset_checks=[
            mbpp.mbpp_tasks_reconcile,
            *replay.replay_checks,
            spider.databases_loaded,
            spider.gold_equivalence_floor,
            *procedures.CHECKS,
            release.quality_suites,
        ],
        jobs=_jobs(),
        loggers={"console": dg.colored_console_logger, "progress": progress_logger},
        resources={
            "build": config,
            "engines": engines_resource(config),
            "llm": llm_resource(config),
            "io_manager": StageStorage(base_dir=str(config.storage_dir)),
        },
    )


def definitions_from_env() -> dg.Definitions:
    """What a worker process loads (celery, Kubernetes): the definitions of the settings it was given."""
    return build_definitions(BuildConfig.from_env())


defs = definitions_from_env()
