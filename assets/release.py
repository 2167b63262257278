"""The release assets: `release_tables` (rows, manifest, quality checks, in memory) and `release`
(versioned Parquet tables, manifest and dataset card, written atomically).

`release_tables` (made by `release_tables_asset` when the definitions are built, so a subset
registered before then is in it) reads, for every registered subset (plbench.subsets), the assets its
`release_inputs` name, and hands their values to the subset's `release_part`. Two assets so
the quality suites run as blocking checks between them: a release table that fails a suite
stops the build before anything is written.
"""

import base64
import json
from pathlib import Path

import dagster as dg

from assets.versions import content_versioned, reads_selection
from pipelines.resources import EnginesResource
from pipelines.stages import seconds_by_stage
from pipelines.step_threads import PYTHON_STEP_TAG
from plbench.config import BuildConfig
from plbench.grading.trivial import gate_parts
from plbench.grading.verdict_cache import FILE_NAME as VERDICTS_FILE
from plbench.grading.verdict_cache import VerdictCache
from plbench.quality import check_release, failed_suites, warm_up
from plbench.release import PreparedRelease, apply_crosscheck, prepare_release, publish
from plbench.validation.crosscheck import CrosscheckReport
from plbench.validation.metadata import metadata_accuracy

GROUP = "release"


def release_tables_asset(subsets: tuple) -> dg.AssetsDefinition:
    """`release_tables` over `subsets` (those registered when the definitions are built): it reads
    every asset their `release_inputs` name."""
    inputs = sorted({key for s in subsets for key in s.release_inputs})

    @dg.asset(
        name="release_tables",
        group_name=GROUP,
        kinds={"python"},
        ins={key: dg.AssetIn(key=key) for key in inputs},
        description="Release rows, rejections, types, databases and manifest of every subset, reconciled, "
        "before writing.",
        metadata=reads_selection(*(s.name for s in subsets)),  # the manifest names the selection
    )
    @content_versioned
    def release_tables(
        context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig], engines: EnginesResource, **values
    ) -> PreparedRelease:
        parts = [s.release_part(build, {k: values[k] for k in s.release_inputs}) for s in subsets]
        with engines.open("postgres") as engine:  # each subset's trivial candidates on its released tasks
            cache = VerdictCache(build.cache_dir / VERDICTS_FILE, engine)
            parts = gate_parts(parts, {s.name: s for s in subsets}, engine, build.workers, cache)
        warm_up()  # the quality suites' library loads while the grammar gate's Node processes parse
        prepared = prepare_release(build, parts)
        prepared.manifest["quality"] = check_release(prepared)
        prepared.manifest["metadata_accuracy"] = metadata_accuracy(prepared.tables["tasks.parquet"][0])
        context.add_output_metadata(
            {
                "build_id": prepared.manifest["build_id"],
                "rows": dg.MetadataValue.json({k: len(v[0]) for k, v in prepared.tables.items()}),
                "quality": dg.MetadataValue.json(prepared.manifest["quality"]),
                "trivial_verdicts": dg.MetadataValue.json(cache.counts),
            }
        )
        return prepared

    return release_tables


@dg.asset_check(
    asset="release_tables",
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
    op_tags=PYTHON_STEP_TAG,
    description="`releases/<version>/`: the release tables as Parquet, `manifest.json`, `README.md`.",
)
@content_versioned
def release(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    release_tables: PreparedRelease,
    crosscheck: CrosscheckReport,
) -> str:
    prepared = apply_crosscheck(release_tables, crosscheck)
    version = prepared.version(build)
    existed = (build.out_dir / version).exists()  # then publish leaves it or refuses
    path = publish(build, prepared, stage_seconds(context))
    manifest = prepared.manifest
    context.add_output_metadata(
        {
            "release_path": dg.MetadataValue.path(str(path)),
            "version": version,
            "unchanged": existed,
            "subsets": dg.MetadataValue.json(manifest["subsets"]),
            "validation": dg.MetadataValue.json(manifest["validation"]),
            **report_metadata(path),
        }
    )
    return str(path)


def stage_seconds(context: dg.AssetExecutionContext) -> dict[str, float]:
    """Seconds each stage's steps took in the run that produced its stored value (this run or an earlier one)."""
    instance, runs, seconds = context.instance, {}, {}
    for key in context.job_def.asset_layer.asset_graph.get_all_asset_keys():
        records = instance.fetch_materializations(key, limit=1).records
        if not records:
            continue
        run_id = records[0].run_id
        if run_id not in runs:
            runs[run_id] = seconds_by_stage(instance.get_run_step_stats(run_id))
        if key.to_python_identifier() in runs[run_id]:
            seconds[key.to_user_string()] = runs[run_id][key.to_python_identifier()]
    return seconds


def report_metadata(path: Path) -> dict:
    """The report's plots as images the UI shows (markdown with the PNG inline), each with its path."""
    manifest = json.loads((path / "manifest.json").read_text())
    meta = {}
    for name in manifest["report"]:
        stem = Path(name).stem
        data = base64.b64encode((path / name).read_bytes()).decode()
        meta[f"report_{stem}"] = dg.MetadataValue.md(f"![{stem}](data:image/png;base64,{data})")
        meta[f"report_{stem}_path"] = dg.MetadataValue.path(str(path / name))
    return meta
