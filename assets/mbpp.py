"""MBPP / MBPP+ assets: raw files → test cases → signatures → task artifacts (with their types)."""

from collections import Counter

import dagster as dg

from assets.sharded import shard_outputs
from assets.versions import content_versioned, reads_selection, selected_subsets
from pipelines.progress import stage_progress
from pipelines.step_threads import PYTHON_STEP_TAG
from pipelines.storage import drop_step_outputs
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.mbpp.stages import (
    Ingested,
    StageOutput,
    build_tasks,
    collect_types,
    extract_test_cases,
    extraction_shards,
    infer_signatures,
    ingest,
    merge_test_cases,
)
from plbench.operators.stages import augment_constant_tasks
from plbench.records import task_id
from plbench.shards import Shard

GROUP = "mbpp"


def _stage_metadata(out: StageOutput, count_in: int) -> dict:
    return {
        "count_in": count_in,
        "count_out": len(out.items),
        "rejected_tasks": dg.MetadataValue.json(out.rejected_by_reason("task")),
        "dropped_cases": dg.MetadataValue.json(out.rejected_by_reason("case")),
        "seconds": round(out.seconds, 2),
    }


def _raw_asset(subset: str):
    @dg.asset(
        name=f"{subset}_raw",
        group_name=GROUP,
        kinds={"python"},
        description=f"The {subset} raw files, checksum-verified, read into typed records.",
        metadata=reads_selection(subset),
    )
    @content_versioned
    def raw(context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig]) -> Ingested | None:
        if not selected_subsets(context, build):
            context.log.info(f"{subset} is not among the selected subsets {build.subsets}")
            return None
        ingested = ingest(build, subset)
        context.add_output_metadata(
            {
                "count_in": ingested.input_count,
                "count_out": len(ingested.problems),
                "rejected": len(ingested.rejections),
                "inputs_sha256": dg.MetadataValue.json(ingested.inputs),
            }
        )
        return ingested

    return raw


mbpp_raw = _raw_asset("mbpp")
mbpp_plus_raw = _raw_asset("mbpp_plus")


def selected(*raws: Ingested | None) -> list[Ingested]:
    return [r for r in raws if r is not None]


@dg.op(name="mbpp_test_cases_shards", out=dg.DynamicOut(Shard))
def _extraction_shards(
    context: dg.OpExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    mbpp_raw: Ingested | None,
    mbpp_plus_raw: Ingested | None,
):
    yield from shard_outputs(context, extraction_shards(selected(mbpp_raw, mbpp_plus_raw), build.shard_count))


@dg.op(name="mbpp_test_cases_shard")
def _extract_shard(context: dg.OpExecutionContext, build: dg.ResourceParam[BuildConfig], shard: Shard) -> Shard:
    with stage_progress(context):
        return Shard(shard.index, shard.count, extract_test_cases(shard.part, build))


@dg.op(name="mbpp_test_cases_merge")
@content_versioned
def _merge_test_cases(
    context: dg.OpExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    mbpp_raw: Ingested | None,
    mbpp_plus_raw: Ingested | None,
    shards: list[Shard],
) -> StageOutput:
    ingested = selected(mbpp_raw, mbpp_plus_raw)
    out = merge_test_cases(ingested, shards)
    drop_step_outputs(build.storage_dir, context.run_id, "mbpp_test_cases")
    meta = _stage_metadata(out, sum(len(i.problems) for i in ingested))
    context.add_output_metadata(meta | {"shards": len(shards)})
    return out


@dg.graph_asset(
    group_name=GROUP,
    kinds={"python"},
    description="Test cases: MBPP asserts parsed by AST; MBPP+ inputs run through the sandboxed reference "
    "(in task shards, each a step: PLBENCH_TASK_SHARDS).",
)
def mbpp_test_cases(mbpp_raw: Ingested | None, mbpp_plus_raw: Ingested | None) -> StageOutput:
    shards = _extraction_shards(mbpp_raw, mbpp_plus_raw).map(_extract_shard).collect()
    return _merge_test_cases(mbpp_raw, mbpp_plus_raw, shards)


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    op_tags=PYTHON_STEP_TAG,
    description="One signature per task, consistent across its test cases.",
)
@content_versioned
def mbpp_signatures(
    context: dg.AssetExecutionContext,
    mbpp_test_cases: StageOutput,
    mbpp_raw: Ingested | None,
    mbpp_plus_raw: Ingested | None,
) -> StageOutput:
    out = infer_signatures(mbpp_test_cases, selected(mbpp_raw, mbpp_plus_raw))
    context.add_output_metadata(_stage_metadata(out, len(mbpp_test_cases.items)))
    return out


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    op_tags=PYTHON_STEP_TAG,
    description="Tasks a constant candidate passes (every case expects one output) get generated inputs, "
    "outputs from the sandboxed reference, or are rejected (constant_result).",
)
@content_versioned
def mbpp_augmented(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    mbpp_signatures: StageOutput,
    mbpp_raw: Ingested | None,
    mbpp_plus_raw: Ingested | None,
) -> StageOutput:
    out = augment_constant_tasks(mbpp_signatures, selected(mbpp_raw, mbpp_plus_raw), build)
    meta = _stage_metadata(out, len(mbpp_signatures.items))
    meta["augmented"] = dg.MetadataValue.json(sorted(t.task_id for t in out.items if t not in mbpp_signatures.items))
    context.add_output_metadata(meta)
    return out


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    op_tags=PYTHON_STEP_TAG,
    description="Prompt, scaffold, setup DDL (collection and object types, once per element type), "
    "test block and test cases per task and dialect.",
)
@content_versioned
def mbpp_tasks(context: dg.AssetExecutionContext, mbpp_augmented: StageOutput) -> StageOutput:
    out = build_tasks(mbpp_augmented)
    meta = _stage_metadata(out, len(mbpp_augmented.items))
    meta["rows_by_dialect"] = dg.MetadataValue.json(dict(sorted(Counter(a.dialect for a in out.items).items())))
    # The types each dialect creates (types.parquet holds them with their DDL, for the released tasks).
    meta["types_by_dialect"] = dg.MetadataValue.json(
        dict(sorted(Counter(t["dialect"] for t in collect_types(out.items)).items()))
    )
    context.add_output_metadata(meta)
    return out


@dg.asset_check(
    asset=mbpp_tasks,
    blocking=True,
    additional_ins={"mbpp_augmented": dg.AssetIn()},
    description="Every typed task has artifacts or a rejection, in every dialect.",
)
def mbpp_tasks_reconcile(mbpp_augmented: StageOutput, mbpp_tasks: StageOutput) -> dg.AssetCheckResult:

    emitted = {(a.task_id, a.dialect) for a in mbpp_tasks.items}
    rejected = {(task_id(r.subset, r.source_id), r.dialect) for r in mbpp_tasks.rejections if r.level == "task"}
    missing = [
        (t.task_id, d)
        for t in mbpp_augmented.items
        for d in DIALECT_NAMES
        if ((t.task_id, d) in emitted) == ((t.task_id, d) in rejected)
    ]
    return dg.AssetCheckResult(passed=not missing, metadata={"unreconciled": dg.MetadataValue.json(missing[:50])})
