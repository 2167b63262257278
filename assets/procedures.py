"""Procedures assets: `procedure_seeds` (seeds with their call suites and mutant scores, per loaded Spider 1.0
database), which the procedures subset's stages start from (assets/subsets.py makes `procedures_tasks` and
`procedures_validation`; plbench/subsets/procedures.py), and the blocking checks on `procedures_tasks`: every
reference passes its own suite, the mutant floor per scenario, no trivial candidate passes.

Not partitioned: the seeds read every database's normalization report (which is partitioned by database) and
run in one pass, as the Spider task assets do; the work is per database inside the library.
"""

from collections import Counter

import dagster as dg

from assets.spider import normalization_report, normalized_assets
from assets.versions import content_versioned, reads_selection, selected_subsets
from pipelines.progress import stage_progress
from pipelines.resources import EnginesResource
from pipelines.step_threads import PYTHON_STEP_TAG
from plbench.config import DIALECT_NAMES, SEEDED_SUBSETS, BuildConfig
from plbench.procedures.stages import ProcedureSeeds, build_seeds
from plbench.procedures.summary import MIN_KILL_RATE, below_floor, summarize
from plbench.spider.stages import DatabaseReport, SpiderInputs, reports_of
from plbench.subsets.base import Staged
from plbench.subsets.procedures import SUBSET

GROUP = SUBSET.name
TASKS = SUBSET.tasks_asset


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    ins={"reports_postgres": dg.AssetIn(key=normalized_assets["postgres"].key)},
    deps=[normalization_report],
    op_tags=PYTHON_STEP_TAG,
    description="Procedural seeds: every identical Spider 1.0 gold query (train and dev) lifted into typed "
    "para_ parameters by each archetype, each with a call suite from the database's own values, checked "
    "deterministic (two runs and a shuffled copy) and scored by its mutants; rejections with reasons.",
    metadata=reads_selection(*SEEDED_SUBSETS),
)
@content_versioned
def procedure_seeds(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    spider1_raw: SpiderInputs | None,
    reports_postgres: dict[str, DatabaseReport] | None,  # None: no database partition (no Spider subset)
) -> ProcedureSeeds | None:
    if spider1_raw is None or not selected_subsets(context, build):
        context.log.info(f"none of {SEEDED_SUBSETS} is among the selected subsets {build.subsets}")
        return None
    reports = reports_of(spider1_raw, reports_postgres or {}, "postgres")
    with engines.open("postgres") as engine, stage_progress(context):
        seeds = build_seeds(build, spider1_raw, reports, engine)
    rejected = Counter(r.reason_code for db in seeds.databases.values() for r in db.rejections)
    context.add_output_metadata(
        {
            "databases": len(seeds.databases),
            "databases_with_seeds": sum(1 for db in seeds.databases.values() if db.seeds),
            "left_out_by_cap": len(seeds.left_out),
            "seeds": sum(len(db.seeds) for db in seeds.databases.values()),
            "rejected": dg.MetadataValue.json(dict(rejected.most_common())),
            "seconds": round(seeds.seconds, 1),
        }
    )
    return seeds


def _check(ok: bool, **metadata) -> dg.AssetCheckResult:
    values = {k: dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in metadata.items()}
    return dg.AssetCheckResult(passed=ok, metadata=values)


@dg.asset_check(
    asset=TASKS,
    blocking=True,
    description="Every seed's reference, run again after the scenarios were built, reproduces its own call suite.",
)
def references_pass_their_suites(procedures_tasks: Staged | None) -> dg.AssetCheckResult:
    databases = [] if procedures_tasks is None else procedures_tasks.value.databases
    failures = {seed: why for db in databases for seed, why in db.reference_failures.items()}
    return _check(not failures, failures=dict(list(failures.items())[:50]), count=len(failures))


@dg.asset_check(
    asset=TASKS,
    blocking=True,
    description=f"Per scenario and dialect, the call suites kill at least {MIN_KILL_RATE:.0%} of the references' "
    "procedural mutants (relational operator, boundary, dropped conjunct, swapped IF, removed DML, wrong column).",
)
def mutant_floor(procedures_tasks: Staged | None) -> dg.AssetCheckResult:
    if procedures_tasks is None:
        return _check(True, below=[])
    section = summarize(procedures_tasks.value.databases, DIALECT_NAMES)
    rates = {k: v["kill_rate"] for k, v in section["scenarios"].items()}
    return _check(not below_floor(section), below=below_floor(section), kill_rates=rates)


@dg.asset_check(
    asset=TASKS,
    blocking=True,
    description="No task's seed is passed by a trivial candidate (no-op, first call only, state change removed); "
    "the release gate runs them again on every released row through the evaluate path.",
)
def trivial_candidates_fail(procedures_tasks: Staged | None) -> dg.AssetCheckResult:
    databases = [] if procedures_tasks is None else procedures_tasks.value.databases
    passed = sorted(
        {
            f"{v.seed.seed_id}: {', '.join(v.strength.trivial_passed)}"
            for db in databases
            for v in db.seeds.seeds
            if v.strength.trivial_passed
        }
    )
    return _check(not passed, passed_by_a_trivial_candidate=passed[:50], count=len(passed))


ASSETS = [procedure_seeds]
CHECKS = [references_pass_their_suites, mutant_floor, trivial_candidates_fail]
