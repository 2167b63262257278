"""The `crosscheck` stage: candidate PL/SQL implementations (a solutions file, or a model) run on the
converted tests and compared with the Python reference on the original ones.

`crosscheck_candidates` is the generation asset: without a solutions file or a configured
endpoint it records `not_run` with the reason. Its answers are cached by request hash
(plbench.llm), so a rebuild calls the model only for requests it has not seen.
"""

import contextlib

import dagster as dg

from assets.versions import content_versioned
from pipelines.resources import EnginesResource, LLMResource
from plbench.config import BuildConfig
from plbench.release import PreparedRelease
from plbench.validation.crosscheck import (
    CandidateSet,
    CrosscheckReport,
    checkable_tasks,
    stage_candidates,
    stage_crosscheck,
)

GROUP = "validation"


def _tasks(prepared: PreparedRelease) -> dict:
    return checkable_tasks(prepared.tables["tasks.parquet"][0])


@dg.asset(  # its kind (python, or openai when a model answers) is set by pipelines/definitions.py
    group_name=GROUP,
    description="Candidate implementations for the crosscheck: `PLBENCH_CROSSCHECK_SOLUTIONS`, else a model "
    "at `PLBENCH_LLM_BASE_URL` / `PLBENCH_LLM_MODEL` (hint level `PLBENCH_LLM_HINT`), else not_run.",
)
@content_versioned
def crosscheck_candidates(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    llm: LLMResource,
    release_tables: PreparedRelease,
) -> CandidateSet:
    candidates = stage_candidates(_tasks(release_tables), build.crosscheck_solutions, llm.client(), build.llm_hint)
    context.add_output_metadata(
        {"candidates": len(candidates.candidates), "source": candidates.source, "not_run": candidates.reason}
    )
    return candidates


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    description="Python–PL/SQL implementation cross-check: output- and pass/fail-level agreement.",
)
@content_versioned
def crosscheck(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    release_tables: PreparedRelease,
    crosscheck_candidates: CandidateSet,
) -> CrosscheckReport:
    with contextlib.ExitStack() as stack:
        dialects = sorted({c.dialect for c in crosscheck_candidates.candidates})
        opened = {d: stack.enter_context(engines.open(d)) for d in dialects}
        report = stage_crosscheck(_tasks(release_tables), crosscheck_candidates, opened, build.sandbox, build.workers)
    context.add_output_metadata({"crosscheck": dg.MetadataValue.json(report.manifest_entry())})
    return report
