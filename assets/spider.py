"""Spider assets: raw files → `normalized_databases/<dialect>` (one partition per database) → tasks.

`normalized_databases` is one asset per dialect, like replay, each partitioned by database
(dynamic partitions `<source>.<database>`, registered by the raw assets), so one database
in one dialect can be rebuilt alone. A build materializes every partition in a single run
(single-run backfill policy). Each partition saves its report beside its emitted files
(`plbench.spider.stages.save_report`); the downstream assets read the reports of the
selected databases from there, so they work whichever run produced each partition.
"""

import warnings
from collections import Counter

import dagster as dg

from pipelines.resources import EnginesResource
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.spider.stages import (
    SpiderInputs,
    SpiderTasks,
    build_spider2,
    build_spider_plsql,
    ingest_spider1,
    ingest_spider2,
    load_reports,
    normalize_database,
    split_partition_key,
)
from plbench.spider.summary import NormalizationSummary, summarize_normalization

GROUP = "spider"
DATABASES = dg.DynamicPartitionsDefinition(name="database")
RAW_ASSETS = {"spider1": "spider1_raw", "spider2_lite": "spider2_lite_raw"}


def _ingest(source: str, config: BuildConfig) -> SpiderInputs:
    return ingest_spider1(config) if source == "spider1" else ingest_spider2(config)


def _sync_partitions(instance: dg.DagsterInstance, source: str, keys: list[str]) -> None:
    """Make this source's partitions exactly `keys`, so a build's partition range holds nothing stale."""
    existing = instance.get_dynamic_partitions(DATABASES.name)
    for key in existing:
        if key.startswith(f"{source}.") and key not in keys:
            instance.delete_dynamic_partition(DATABASES.name, key)
    instance.add_dynamic_partitions(DATABASES.name, [k for k in keys if k not in set(existing)])


def _raw_asset(subset: str, source: str):
    @dg.asset(
        name=RAW_ASSETS[source],
        group_name=GROUP,
        kinds={"python"},
        description=f"{source}: verified raw files, its databases and questions; registers one "
        "`database` partition per loadable database.",
    )
    def raw(context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig]) -> SpiderInputs | None:
        if subset not in build.subsets:
            _sync_partitions(context.instance, source, [])
            context.log.info(f"{subset} is not among the selected subsets {build.subsets}")
            return None
        inputs = _ingest(source, build)
        _sync_partitions(context.instance, source, inputs.partition_keys())
        context.add_output_metadata(
            {
                "databases": len(inputs.databases),
                "missing_databases": dg.MetadataValue.json(inputs.missing),
                "questions": len(inputs.questions),
                "input": inputs.input_count,
                "rejected": dg.MetadataValue.json(dict(Counter(r.reason_code for r in inputs.rejections))),
            }
        )
        return inputs

    return raw


spider1_raw = _raw_asset("spider_plsql", "spider1")
spider2_lite_raw = _raw_asset("spider2", "spider2_lite")


# The single-run backfill policy is marked beta; it is what runs every database in one run.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)


def _normalized_asset(dialect: str):
    @dg.asset(
        key=["normalized_databases", dialect],
        group_name=GROUP,
        kinds={dialect},
        partitions_def=DATABASES,
        backfill_policy=dg.BackfillPolicy.single_run(),
        ins={"spider1_raw": dg.AssetIn(), "spider2_lite_raw": dg.AssetIn()},
        description=f"One database in {dialect}: DDL and data files under normalized/, "
        + (
            "loaded with COPY, verified (row counts, checksums) and checked by gold-query equivalence."
            if dialect == "postgres"
            else "checked without a server (DDL and transpiled gold parse as Oracle, names fit)."
        ),
    )
    def normalized(
        context: dg.AssetExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        engines: EnginesResource,
        spider1_raw: SpiderInputs | None,
        spider2_lite_raw: SpiderInputs | None,
    ) -> None:
        inputs = {"spider1": spider1_raw, "spider2_lite": spider2_lite_raw}
        with engines.open(dialect) as engine:
            for key in context.partition_keys:
                source, name = split_partition_key(key)
                if inputs[source] is None:
                    raise RuntimeError(f"partition {key}: {source} was not ingested in this build")
                report = normalize_database(build, inputs[source], name, engine)
                context.add_asset_metadata(_partition_metadata(report), partition_key=key)

    return normalized


def _partition_metadata(report) -> dict:
    meta = {
        "tables": report.tables,
        "rows": report.rows,
        "seconds": round(report.seconds, 2),
        "decisions": dg.MetadataValue.json(
            dict(Counter(d.get("decision", d.get("rule", "")) for d in report.decisions))
        ),
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


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    deps=list(normalized_assets.values()),
    description="Every selected database's reports in both dialects: the manifest's normalization "
    "section and the rows of databases.parquet.",
)
def normalization_report(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    spider1_raw: SpiderInputs | None,
    spider2_lite_raw: SpiderInputs | None,
) -> NormalizationSummary:
    selected = [i for i in (spider1_raw, spider2_lite_raw) if i is not None]
    reports = {i.source: {d: load_reports(build, i, d) for d in DIALECT_NAMES} for i in selected}
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
        "rows_by_dialect": dg.MetadataValue.json(dict(Counter(r.dialect for r in tasks.rows))),
        "rejected": dg.MetadataValue.json(dict(Counter(r.reason_code for r in tasks.rejections))),
        "validation": dg.MetadataValue.json(tasks.validation),
        "seconds": round(tasks.seconds, 2),
    }


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    deps=[normalization_report],
    description="Spider-PLSQL: a task per Spider 1.0 dev question and dialect whose reference block "
    "reproduces the gold output on PostgreSQL.",
)
def spider_plsql_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    spider1_raw: SpiderInputs | None,
) -> SpiderTasks:
    if spider1_raw is None:
        return SpiderTasks("spider_plsql")
    with engines.open("postgres") as engine, engines.open("oracle") as oracle:
        tasks = build_spider_plsql(
            build,
            spider1_raw,
            load_reports(build, spider1_raw, "postgres"),
            load_reports(build, spider1_raw, "oracle"),
            engine,
            oracle,
        )
    context.add_output_metadata(_tasks_metadata(tasks))
    return tasks


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    deps=[normalization_report],
    description="Spider 2.0-Lite task records for the questions with gold SQL: the gold transpiled to both "
    "dialects, tables/columns required, the official result; gold run on the sample rows.",
)
def spider2_tasks(
    context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig], spider2_lite_raw: SpiderInputs | None
) -> SpiderTasks:
    if spider2_lite_raw is None:
        return SpiderTasks("spider2")
    tasks = build_spider2(
        build,
        spider2_lite_raw,
        load_reports(build, spider2_lite_raw, "postgres"),
        load_reports(build, spider2_lite_raw, "oracle"),
    )
    context.add_output_metadata(_tasks_metadata(tasks))
    return tasks
