"""ILE on MBPP (`mbpp_ile_tasks`). Its tasks' validation on the real servers (`mbpp_ile_validation`) is
assets/ile_validation.py, and ILE on the procedures' seeds assets/procedural_ile.py: an asset's code version is
its module's source closure, so each module holds only the code its assets run (a fix to the replay does not
rerun ILE, nor a change to ILE on MBPP the procedures')."""

from collections import Counter

import dagster as dg

from assets.versions import content_versioned, reads_selection, selected_subsets
from pipelines.resources import LLMResource
from plbench.config import BuildConfig
from plbench.mbpp.stages import Ingested, StageOutput, build_tasks
from plbench.operators.framework import configured_proposer
from plbench.operators.proposers import DeterministicProposer, LLMProposer
from plbench.operators.stages import IleOutput, ile_tasks

GROUP = "operators"


@dg.asset(
    group_name=GROUP,
    kinds={"python"},
    description="ILE on MBPP: up to N rounds per task, each adding a business rule proven by execution in "
    "the sandbox; the enhanced tasks' artifacts in both dialects, and every proposal with its verdict.",
    metadata=reads_selection("mbpp_ile"),
)
@content_versioned
def mbpp_ile_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    llm: LLMResource,
    mbpp_augmented: StageOutput,
    mbpp_raw: Ingested | None,
) -> IleOutput | None:
    if mbpp_raw is None or not selected_subsets(context, build):
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
