"""The validation of ILE on MBPP's tasks on the real servers (`mbpp_ile_validation`): the same replay with
mutants and round trip MBPP's tasks get. A module apart from ILE itself (assets/operators.py), so that a fix to
the replay reruns this and not ILE (an asset's code version is its module's source closure)."""

import dagster as dg

from assets.versions import content_versioned
from pipelines.resources import EnginesResource
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.mbpp.validation_stages import replay_stage, roundtrip_stage
from plbench.operators.stages import IleOutput

GROUP = "operators"


@dg.asset(
    group_name=GROUP,
    kinds=set(DIALECT_NAMES),
    description="Replay with mutants and the value round trip of every mbpp_ile task, per dialect.",
)
@content_versioned
def mbpp_ile_validation(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    mbpp_ile_tasks: IleOutput | None,
) -> dict | None:
    if mbpp_ile_tasks is None:
        return None
    reports = {}
    for dialect in DIALECT_NAMES:
        with engines.open(dialect) as engine:
            replay = replay_stage(mbpp_ile_tasks.tasks, engine, build.workers)
            reports[dialect] = (replay, roundtrip_stage(mbpp_ile_tasks.tasks, engine, build.workers))
    context.add_output_metadata(
        {
            d: dg.MetadataValue.json({"replay": r.counts(), "mutants": r.mutant_counts()})
            for d, (r, _) in reports.items()
        }
    )
    return reports
