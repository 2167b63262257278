"""Assets made from a subset's declared stages: how a new subset plugs into the graph without asset code.

To add a subset, write one library module (no Dagster) and register it:

    from plbench.subsets import register
    from plbench.subsets.base import Staged, Stages, StagedSubset

    class MySubset(StagedSubset):
        name = "my_subset"  # the `subset` column, the task id prefix, the asset names and group
        source_dataset, licence, summary = "...", "CC-BY-4.0", "one sentence for the dataset card"
        required_columns = ("database",)  # TaskRow columns every row fills (the quality suites check them)
        stages = Stages(
            ingest=ingest,      # ingest(config, **inputs) -> Staged(records, count_in, count_out, rejections)
            build=build,        # build(config, records) -> Staged(tasks, ...); engines= too with build_engines
            validate=validate,  # validate(config, tasks, engines) -> Staged(SubsetRelease, ...)
            inputs=("spider1_raw",),  # upstream assets whose values ingest takes, by asset name
        )

    register(MySubset())  # in plbench/subsets/__init__.py's built-ins, or by a test or a plug-in

and add its name to `plbench.config.SUBSETS` (the subsets a build selects unless told otherwise).

`subset_assets` then makes, for every registered `StagedSubset`, in group `<name>`:
- `<name>_tasks`: ingest, then build, when the build selects the subset (`BuildConfig.subsets`), else None;
- `<name>_validation`: validate, on the engines of `stages.validate_engines` (the `engines` resource);
each with count_in / count_out / rejected (by reason code) / seconds and the stage's own `details` as
metadata, and a code version from the subset's module and what it imports (assets/versions.py). The
validation's value is the subset's `SubsetRelease` with the ingest and build rejections added
(`Stages.validation`). The release reads it through the subset's `release_inputs`, runs its trivial
candidates and the quality suites on its rows, and `plbench evaluate` grades them by their kind of task.
"""

import contextlib
import inspect
import time

import dagster as dg

from assets.versions import code_version, content_versioned, reads_selection, selected_subsets
from pipelines.progress import stage_progress
from pipelines.resources import EnginesResource
from plbench.config import BuildConfig
from plbench.subsets.base import Staged, StagedSubset

MODULE = __name__


def _metadata(staged: Staged, seconds: float) -> dict:
    return {
        "count_in": staged.count_in,
        "count_out": staged.count_out,
        "rejected": dg.MetadataValue.json(staged.rejected_by_reason()),
        **{key: dg.MetadataValue.json(value) for key, value in staged.details.items()},
        "seconds": round(seconds, 2),
    }


def _timed(context: dg.AssetExecutionContext, resource: EnginesResource, dialects: tuple[str, ...], stage) -> Staged:
    """`stage(engines)` with the engines of `dialects` open; its figures become the asset's metadata."""
    start = time.monotonic()
    with contextlib.ExitStack() as stack, stage_progress(context):
        staged = stage({d: stack.enter_context(resource.open(d)) for d in dialects})
    context.add_output_metadata(_metadata(staged, time.monotonic() - start))
    return staged


def _tasks_asset(subset: StagedSubset, version: str) -> dg.AssetsDefinition:
    stages = subset.stages

    @dg.asset(
        name=subset.tasks_asset,
        group_name=subset.name,
        kinds={"python", *stages.build_engines},
        code_version=version,
        ins={key: dg.AssetIn(key=key) for key in stages.inputs},
        description=f"{subset.name}: its raw records ingested and its candidate tasks built "
        f"({_qualname(stages.ingest)}, {_qualname(stages.build)}).",
        metadata=reads_selection(subset.name),
    )
    @content_versioned
    def tasks(
        context: dg.AssetExecutionContext, build: dg.ResourceParam[BuildConfig], engines: EnginesResource, **inputs
    ) -> Staged | None:
        if not selected_subsets(context, build):
            context.log.info(f"{subset.name} is not among the selected subsets {build.subsets}")
            return None
        return _timed(context, engines, stages.build_engines, lambda opened: stages.tasks(build, inputs, opened))

    return tasks


def _validation_asset(subset: StagedSubset, version: str) -> dg.AssetsDefinition:
    stages = subset.stages

    @dg.asset(
        name=subset.validation_asset,
        group_name=subset.name,
        kinds=set(stages.validate_engines) or {"python"},
        code_version=version,
        ins={"built": dg.AssetIn(key=subset.tasks_asset)},
        description=f"{subset.name}: its tasks validated by execution ({_qualname(stages.validate)}); "
        "the value is the subset's part of the release.",
    )
    @content_versioned
    def validation(
        context: dg.AssetExecutionContext,
        build: dg.ResourceParam[BuildConfig],
        engines: EnginesResource,
        built: Staged | None,
    ) -> Staged | None:
        if built is None:
            return None
        return _timed(context, engines, stages.validate_engines, lambda opened: stages.validation(build, built, opened))

    return validation


def _qualname(stage) -> str:
    return f"{stage.__module__}.{stage.__qualname__}"


def subset_code_version(subset: StagedSubset) -> str:
    """This module's closure, the subset's module's and each stage's (they may live elsewhere)."""
    stages = subset.stages
    callables = (stages.ingest, stages.build, stages.validate)
    return code_version(MODULE, type(subset).__module__, *(inspect.getmodule(s).__name__ for s in callables))


def subset_assets(subsets, taken: set[str]) -> list[dg.AssetsDefinition]:
    """The two assets of every `StagedSubset` among `subsets`; a name among `taken` (the hand-written
    assets) is refused, since one asset key cannot have two definitions."""
    out = []
    for subset in subsets:
        if not isinstance(subset, StagedSubset):
            continue
        clash = {subset.tasks_asset, subset.validation_asset} & taken
        if clash:
            raise ValueError(f"subset {subset.name!r} declares stages, but {sorted(clash)} are hand-written assets")
        version = subset_code_version(subset)
        out += [_tasks_asset(subset, version), _validation_asset(subset, version)]
    return out
