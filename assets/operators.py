"""Construction-operator assets: ILE on MBPP (`mbpp_ile_tasks`) and the validation of its tasks on the
real servers (`mbpp_ile_validation`), the same replay with mutants and round trip MBPP's tasks get; ILE on
the procedures' seeds (`procedural_ile`, read by the subsets procedures_ile and multiturn, whose assets
assets/subsets.py makes)."""

from collections import Counter

import dagster as dg

from assets.versions import content_versioned
from pipelines.progress import stage_progress
from pipelines.resources import EnginesResource, LLMResource
from plbench.config import DIALECT_NAMES, BuildConfig, NotConfigured
from plbench.mbpp.stages import Ingested, StageOutput, build_tasks, replay_stage, roundtrip_stage
from plbench.operators.framework import DETERMINISTIC
from plbench.operators.procedural_ile import SUBSET as ILE
from plbench.operators.procedural_ile import ProcedureRuleProposer
from plbench.operators.procedural_llm import LLMJudge, ProcedureLLMProposer
from plbench.operators.procedural_stage import MULTITURN, ProceduralIle, build_ile, summary
from plbench.operators.proposers import DeterministicProposer, LLMProposer
from plbench.operators.stages import IleOutput, ile_tasks
from plbench.procedures.stages import ProcedureSeeds, databases_of
from plbench.spider.stages import SpiderInputs

GROUP = "operators"


def proposer(build: BuildConfig, llm: LLMResource, rules=DeterministicProposer, model=LLMProposer):
    """The configured proposer: the rule templates unless the build asks for the model."""
    if build.ile_proposer == DETERMINISTIC:
        return rules()
    if build.ile_proposer != "llm":
        raise ValueError(f"PLBENCH_ILE_PROPOSER={build.ile_proposer!r}: expected 'deterministic' or 'llm'")
    client = llm.client()
    if isinstance(client, NotConfigured):
        raise ValueError(f"PLBENCH_ILE_PROPOSER=llm but {client.reason}")
    return model(client)


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
    out = ile_tasks(mbpp_augmented, [mbpp_raw], build, proposer(build, llm), build.ile_rounds)
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


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    description="ILE on every validated procedure seed: up to N rounds, each adding a business rule to the "
    "reference (both dialects) and a clause to the requirement, accepted only when it runs, a call of the rebuilt "
    "suite tells it from the previous round and the clause names what it touches (a model judges too when one is "
    "configured); the procedures_ile tasks, the multiturn episodes, and every proposal with its verdict.",
)
def procedural_ile(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    llm: LLMResource,
    spider1_raw: SpiderInputs | None,
    procedure_seeds: ProcedureSeeds | None,
) -> ProceduralIle | None:
    if procedure_seeds is None or spider1_raw is None or not {ILE, MULTITURN} & set(build.subsets):
        context.log.info(f"procedures_ile and multiturn need the procedures' seeds; selected: {build.subsets}")
        return None
    chosen = proposer(build, llm, ProcedureRuleProposer, ProcedureLLMProposer)
    client = llm.client()
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
