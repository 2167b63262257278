"""Construction-operator assets on MBPP: ILE (`mbpp_ile_tasks`) and the validation of its tasks on the
real servers (`mbpp_ile_validation`), the same replay with mutants and round trip MBPP's tasks get. ILE on
the procedures' seeds is assets/procedural_ile.py: a module of its own, so its code version holds none of
MBPP's code."""

from collections import Counter

import dagster as dg

from assets.versions import content_versioned
from pipelines.resources import EnginesResource, LLMResource
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.mbpp.stages import Ingested, StageOutput, build_tasks, replay_stage, roundtrip_stage
from plbench.operators.framework import configured_proposer
from plbench.operators.proposers import DeterministicProposer, LLMProposer
from plbench.operators.stages import IleOutput, ile_tasks

GROUP = "operators"


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    description="ILE on MBPP: up to N rounds per task, each adding a business rule proven by execution in "
    "the sandbox; the enhanced tasks' artifacts in both dialects, and every proposal with its verdict.",
)
@content_versioned
def mbpp_ile_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    llm: LLMResource,
    mbpp_augmented: StageOutput,
    mbpp_raw: Ingested | None,
) -> IleOutput | None:
    if mbpp_raw is None or "mbpp_ile" not in build.subsets:
        context.log.info(f"mbpp_ile is not among the selected subsets {build.subsets}")
        return None
    chosen = configured_proposer(build.ile_proposer, llm.client, DeterministicProposer, LLMProposer)
    out = ile_tasks(mbpp_augmented, [mbpp_raw], build, chosen, build.ile_rounds)
    out.tasks = build_tasks(out.typed)
    context.add_output_metadata(
        {
            "input": out.input_count,
            "enhanced": len(out.typed.items),
            "rounds": dg.MetadataValue.json(dict(sorted(Counter(out.rounds.values()).items()))),
            "rejected": dg.MetadataValue.json(dict(Counter(r.reason_code for r in out.typed.rejections))),
            "operators": dg.MetadataValue.json(out.ledger.summary()),
            "seconds": round(out.typed.seconds, 2),
        }
    )
    return out


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
