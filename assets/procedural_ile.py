"""ILE on the procedures' seeds (`procedural_ile`), read by the subsets procedures_ile and multiturn, whose
assets assets/subsets.py makes. Its own module, apart from ILE on MBPP (assets/operators.py): an asset's code
version is its module's source closure, so a change to MBPP's replay does not make the procedures' ILE rerun.
"""

import dagster as dg

from assets.versions import content_versioned, reads_selection, selected_subsets
from pipelines.progress import stage_progress
from pipelines.resources import EnginesResource, LLMResource
from plbench.config import BuildConfig, NotConfigured
from plbench.operators.framework import configured_proposer
from plbench.operators.procedural_ile import SUBSET as ILE
from plbench.operators.procedural_ile import ProcedureRuleProposer
from plbench.operators.procedural_llm import LLMJudge, ProcedureLLMProposer
from plbench.operators.procedural_stage import MULTITURN, ProceduralIle, build_ile, summary
from plbench.procedures.stages import ProcedureSeeds, databases_of
from plbench.spider.stages import SpiderInputs

GROUP = "operators"


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    description="ILE on every validated procedure seed: up to N rounds, each adding a business rule to the "
    "reference (both dialects) and a clause to the requirement, accepted only when it runs, a call of the rebuilt "
    "suite tells it from the previous round and the clause names what it touches (a model judges too when one is "
    "configured); the procedures_ile tasks, the multiturn episodes, and every proposal with its verdict.",
    metadata=reads_selection(ILE, MULTITURN),
)
@content_versioned
def procedural_ile(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    llm: LLMResource,
    spider1_raw: SpiderInputs | None,
    procedure_seeds: ProcedureSeeds | None,
) -> ProceduralIle | None:
    if procedure_seeds is None or spider1_raw is None or not selected_subsets(context, build):
        context.log.info(f"procedures_ile and multiturn need the procedures' seeds; selected: {build.subsets}")
        return None
    client = llm.client()
    chosen = configured_proposer(build.ile_proposer, lambda: client, ProcedureRuleProposer, ProcedureLLMProposer)
    judge = None if isinstance(client, NotConfigured) else LLMJudge(client)
    with engines.open("postgres") as engine, stage_progress(context):
        out = build_ile(
            procedure_seeds.databases,
            lambda name: databases_of(build, spider1_raw, name),
            engine,
            chosen,
            build.procedure_ile_rounds,
            judge,
            build.procedure_workers,
            build.procedure_ile_databases,
        )
    section = summary(out)
    context.add_output_metadata(
        {
            "databases": section["databases"]["taking_part"],
            "left_out_by_cap": section["databases"]["left_out"],
            "seeds": section["seeds"],
            "enhanced": section["enhanced"],
            "episodes": section["episodes"],
            "rounds": dg.MetadataValue.json({str(k): v for k, v in section["rounds"].items()}),
            "per_round": dg.MetadataValue.json(section["per_round"]),
            "operators": dg.MetadataValue.json(out.ledger.summary()),
            "judge": "llm" if judge else "not configured",
            "seconds": round(out.seconds, 1),
        }
    )
    return out
