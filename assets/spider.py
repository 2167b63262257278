"""Spider assets: raw files → `normalized_databases_<dialect>` (one partition per database) → tasks.

`normalized_databases_<dialect>` is one asset per dialect, like replay, each partitioned by database
(dynamic partitions `<source>.<database>`), so one database in one dialect can be rebuilt
alone. The partitions are registered before a run starts (`register_database_partitions`,
from the raw files alone), so a build materializes every partition in the same single run
as everything else (single-run backfill policy). Each partition's value is its
`DatabaseReport`, stored by the IO manager (pipelines/storage.py); the downstream assets
receive every partition's report, whichever run produced it.
"""

import warnings
from collections import Counter

import dagster as dg

from assets.versions import content_versioned, reads_selection, selected_subsets
from pipelines.resources import EnginesResource
from pipelines.step_threads import PYTHON_STEP_TAG
from plbench.child_process import in_child_process
from plbench.config import DIALECT_NAMES, SEEDED_SUBSETS, BuildConfig
from plbench.content_digest import content_digest
from plbench.dialects import DIALECTS
from plbench.spider.plsql_tasks import SpiderTasks, build_spider_plsql
from plbench.spider.spider2_rows import build_spider2
from plbench.spider.stages import (
    DatabaseReport,
    SpiderInputs,
    database_keys,
    ingest_spider1,
    ingest_spider2,
    normalize_databases,
    reports_of,
    split_partition_key,
)
from plbench.spider.summary import NormalizationSummary, summarize_normalization

GROUP = "spider"
DATABASES = dg.DynamicPartitionsDefinition(name="database")
RAW_ASSETS = {"spider1": "spider1_raw", "spider2_lite": "spider2_lite_raw"}
# subset -> the raw dataset it reads (the procedures' seeds come from Spider 1.0)
SOURCES = {"spider_plsql": "spider1", "spider2": "spider2_lite"} | dict.fromkeys(SEEDED_SUBSETS, "spider1")


def selected_sources(config: BuildConfig) -> list[str]:
    """The raw Spider datasets the selected subsets read, in SOURCES order."""
    return list(dict.fromkeys(source for subset, source in SOURCES.items() if subset in config.subsets))


def reading(source: str) -> list[str]:
    """The subsets that read the raw dataset `source`."""
    return [subset for subset, read in SOURCES.items() if read == source]


def _ingest(source: str, config: BuildConfig) -> SpiderInputs:
    return ingest_spider1(config) if source == "spider1" else ingest_spider2(config)


def register_database_partitions(instance: dg.DagsterInstance, config: BuildConfig) -> list[str]:
    """Make the `database` partitions exactly the selected datasets' databases, before a run starts
    (a run's partition range is fixed when it is launched). Returns the keys, in registration order."""
    wanted = [key for source in selected_sources(config) for key in database_keys(config, source)]
    existing = instance.get_dynamic_partitions(DATABASES.name)
    for key in existing:
        if key not in wanted:
            instance.delete_dynamic_partition(DATABASES.name, key)
    instance.add_dynamic_partitions(DATABASES.name, [k for k in wanted if k not in set(existing)])
    return instance.get_dynamic_partitions(DATABASES.name)


def _raw_asset(source: str):
    @dg.asset(
        name=RAW_ASSETS[source],
        group_name=GROUP,
        kinds={"python"},
        description=f"{source}: verified raw files, its databases and questions (one `database` "
        "partition per loadable database).",
        metadata=reads_selection(*reading(source)),
    )
    @content_versioned
    def raw(context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig]) -> SpiderInputs | None:
        if not selected_subsets(context, build):
            context.log.info(f"no subset reading {source} is among the selected subsets {build.subsets}")
            return None
        inputs = _ingest(source, build)
        context.add_output_metadata(
            {
                "databases": len(inputs.databases),
                "missing_databases": dg.MetadataValue.json(inputs.missing),
                "count_in": inputs.input_count,
                "count_out": len(inputs.questions),
                "rejected": dg.MetadataValue.json(dict(Counter(r.reason_code for r in inputs.rejections))),
            }
        )
        return inputs

    return raw


spider1_raw = _raw_asset("spider1")
spider2_lite_raw = _raw_asset("spider2_lite")


# The single-run backfill policy is marked beta; it is what runs every database in one run.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)


def _normalized_asset(dialect: str):
    @dg.asset(
        key=f"normalized_databases_{dialect}",
        group_name=GROUP,
        kinds={dialect},
        partitions_def=DATABASES,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"spider1_raw": dg.AssetIn(), "spider2_lite_raw": dg.AssetIn()},
        description=f"One database in {dialect}: DDL and data files under normalized/, "
        + (
            "checked without a server (DDL and transpiled gold parse as Oracle, names fit)."
            if DIALECTS[dialect].checked_statically
            else "loaded with COPY, verified (row counts, checksums) and checked by gold-query equivalence."
        ),
    )
    @content_versioned
    def normalized(
        context: dg.AssetExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        engines: EnginesResource,
        spider1_raw: SpiderInputs | None,
        spider2_lite_raw: SpiderInputs | None,
    ) -> dict[str, DatabaseReport]:
        inputs = {"spider1": spider1_raw, "spider2_lite": spider2_lite_raw}
        for key in context.partition_keys:
            source, name = split_partition_key(key)
            if inputs[source] is None or name not in inputs[source].databases:
                raise LookupError(
                    f"partition {key}: no such database among the ingested raw files; "
                    "`plbench build` registers the partitions of the selected subsets"
                )
        reports = {}
        with engines.open(dialect) as engine:
            for key, report in normalize_databases(build, inputs, context.partition_keys, engine):
                reports[key] = report
                _add_partition_metadata(context, key, _partition_metadata(report))
        return reports

    return normalized


def _add_partition_metadata(context: dg.AssetExecutionContext, key: str, metadata: dict) -> None:
    """`context.add_asset_metadata(metadata, partition_key=key)` without its check that the run targets
    `key`, a key of `context.partition_keys` here: the check reads the instance's dynamic partitions (three
    queries a call; 5.7 s of a 27 s Oracle rerun of the 325 mirror databases). It goes to the step's
    metadata accumulator as that method's last line does (private, and dagster is pinned to one release)."""
    step = context.op_execution_context._step_execution_context
    step._metadata_accumulator = step._metadata_accumulator.with_additional_asset_metadata(
        asset_key=context.asset_key, metadata=metadata, partition_key=key
    )


# A partition's content digest, which pipelines/freshness.py compares across its materializations: the
# data version Dagster records for each partition is that of the whole run's value, all partitions at once.
PARTITION_DIGEST = "content_digest"


def _partition_metadata(report) -> dict:
    meta = {
        PARTITION_DIGEST: content_digest(report),
        "tables": report.tables,
        "rows": report.rows,
        "seconds": round(report.seconds, 2),
        "decisions": dg.MetadataValue.json(report.decision_counts),
    }
    if report.load is not None:
        meta.update({"loaded": report.load.loaded, "verified": report.load.verified, "load_error": report.load.error})
    else:
        meta["not_run"] = report.not_run
    if report.equivalence:
        meta["gold_equivalence"] = dg.MetadataValue.json(report.equivalence_counts())
    if report.static_problems:
        meta["static_problems"] = dg.MetadataValue.json(report.static_problems[:20])
    return meta


normalized_assets = {d: _normalized_asset(d) for d in DIALECT_NAMES}


def _reports_ins() -> dict[str, dg.AssetIn]:
    """Every partition of both dialects' `normalized_databases_<dialect>`, as {partition key: report} per dialect."""
    return {f"reports_{d}": dg.AssetIn(key=a.key) for d, a in normalized_assets.items()}


def _by_dialect(reports_oracle: dict, reports_postgres: dict) -> dict[str, dict[str, DatabaseReport]]:
    return {"oracle": reports_oracle or {}, "postgres": reports_postgres or {}}


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    ins=_reports_ins(),
    op_tags=PYTHON_STEP_TAG,
    description="Every selected database's reports in both dialects: the manifest's normalization "
    "section and the rows of databases.parquet.",
)
@content_versioned
def normalization_report(
    context: dg.AssetExecutionContext,
    spider1_raw: SpiderInputs | None,
    spider2_lite_raw: SpiderInputs | None,
    reports_oracle: dict[str, DatabaseReport] | None,  # None: no database partition (no Spider subset)
    reports_postgres: dict[str, DatabaseReport] | None,  # None: no database partition (no Spider subset)
) -> NormalizationSummary:
    selected = [i for i in (spider1_raw, spider2_lite_raw) if i is not None]
    stored = _by_dialect(reports_oracle, reports_postgres)
    reports = {i.source: {d: reports_of(i, stored[d], d) for d in DIALECT_NAMES} for i in selected}
    summary = summarize_normalization(selected, reports)
    context.add_output_metadata({"normalization": dg.MetadataValue.json(summary.manifest)})
    return summary


@dg.asset_check(
    asset=normalization_report,
    blocking=True,
    description="Every database that loaded on PostgreSQL has row counts and checksums equal to the "
    "source. A database that did not load is named with its cause (manifest `failed`) "
    "and its questions are rejected; that alone does not block.",
)
def databases_loaded(normalization_report: NormalizationSummary) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not normalization_report.unverified,
        metadata={
            "unverified": dg.MetadataValue.json(normalization_report.unverified),
            "not_loaded": dg.MetadataValue.json(normalization_report.failed),
        },
    )


@dg.asset_check(
    asset=normalization_report,
    blocking=True,
    description="Spider 1.0 dev gold queries return identical results on PostgreSQL and SQLite, "
    "at or above the configured floor.",
)
def gold_equivalence_floor(
    build: dg.ResourceParam[BuildConfig], normalization_report: NormalizationSummary
) -> dg.AssetCheckResult:
    rate = normalization_report.dev_equivalence_rate()
    return dg.AssetCheckResult(
        passed=rate is None or rate >= build.min_gold_equivalence,
        metadata={"rate": rate if rate is not None else "no dev queries", "floor": build.min_gold_equivalence},
    )


def _tasks_metadata(tasks: SpiderTasks) -> dict:
    return {
        "count_out": len(tasks.rows),
        "rows_by_dialect": dg.MetadataValue.json(dict(Counter(r.dialect for r in tasks.rows))),
        "rejected": dg.MetadataValue.json(dict(Counter(r.reason_code for r in tasks.rejections))),
        "validation": dg.MetadataValue.json(tasks.validation),
        "seconds": round(tasks.seconds, 2),
    }


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    ins=_reports_ins(),
    deps=[normalization_report],
    op_tags=PYTHON_STEP_TAG,
    description="Spider-PLSQL: a task per Spider 1.0 dev question and dialect whose reference block "
    "reproduces the gold output on PostgreSQL.",
    metadata=reads_selection("spider_plsql"),
)
@content_versioned
def spider_plsql_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    spider1_raw: SpiderInputs | None,
    reports_oracle: dict[str, DatabaseReport] | None,
    reports_postgres: dict[str, DatabaseReport] | None,
) -> SpiderTasks:
    # spider1_raw may serve the procedures only
    if spider1_raw is None or not selected_subsets(context, build):
        return SpiderTasks("spider_plsql")
    stored = _by_dialect(reports_oracle, reports_postgres)
    with engines.open("postgres") as engine, engines.open("oracle") as oracle:
        tasks = build_spider_plsql(
            build,
            spider1_raw,
            reports_of(spider1_raw, stored["postgres"], "postgres"),
            reports_of(spider1_raw, stored["oracle"], "oracle"),
            engine,
            oracle,
        )
    context.add_output_metadata(_tasks_metadata(tasks))
    return tasks


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    ins=_reports_ins(),
    deps=[normalization_report],
    description="Spider 2.0-Lite task records for the questions with gold SQL: the gold transpiled to both "
    "dialects, tables/columns required, the official result; gold run on the sample rows.",
)
@content_versioned
def spider2_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    spider2_lite_raw: SpiderInputs | None,
    reports_oracle: dict[str, DatabaseReport] | None,
    reports_postgres: dict[str, DatabaseReport] | None,
) -> SpiderTasks:
    if spider2_lite_raw is None:
        return SpiderTasks("spider2")
    stored = _by_dialect(reports_oracle, reports_postgres)
    tasks = in_child_process(  # beside the Spider-PLSQL tasks, whose work is Python in this process
        build_spider2,
        build,
        spider2_lite_raw,
        reports_of(spider2_lite_raw, stored["postgres"], "postgres"),
        reports_of(spider2_lite_raw, stored["oracle"], "oracle"),
    )
    context.add_output_metadata(_tasks_metadata(tasks))
    return tasks
