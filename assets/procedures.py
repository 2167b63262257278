"""Procedures assets (subset `procedures`): `procedure_seeds` (seeds with their call suites and mutant scores,
per loaded Spider 1.0 database) → `procedure_tasks` (every scenario adapter on every seed), with the blocking
checks: every reference passes its own suite, the mutant floor per scenario, no trivial candidate passes.

Not partitioned: both read every database's normalization report (which is partitioned by database) and
run in one pass, as the Spider task assets do; the work is per database inside the library.
"""

from collections import Counter

import dagster as dg

from assets.spider import normalization_report, normalized_assets
from pipelines.resources import EnginesResource
from plbench.config import DIALECT_NAMES, BuildConfig
from plbench.procedures.stages import ProcedureSeeds, ProcedureTasks, build_seeds, build_tasks
from plbench.procedures.summary import MIN_KILL_RATE, below_floor, summarize
from plbench.spider.stages import DatabaseReport, SpiderInputs, reports_of

GROUP = "procedures"


def _selected(build: BuildConfig, spider1_raw) -> bool:
    return spider1_raw is not None and GROUP in build.subsets


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    ins={"reports_postgres": dg.AssetIn(key=normalized_assets["postgres"].key)},
    deps=[normalization_report],
    description="Procedural seeds: every identical Spider 1.0 gold query (train and dev) lifted into typed "
    "para_ parameters by each archetype, each with a call suite from the database's own values, checked "
    "deterministic (two runs and a shuffled copy) and scored by its mutants; rejections with reasons.",
)
def procedure_seeds(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    spider1_raw: SpiderInputs | None,
    reports_postgres: dict[str, DatabaseReport] | None,  # None: no database partition (no Spider subset)
) -> ProcedureSeeds | None:
    if not _selected(build, spider1_raw):
        context.log.info(f"procedures is not among the selected subsets {build.subsets}")
        return None
    reports = reports_of(spider1_raw, reports_postgres or {}, "postgres")
    with engines.open("postgres") as engine:
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


@dg.asset(
    group_name=GROUP,
    kinds={"postgres"},
    description="Procedural tasks: every scenario adapter (A1-A5, B1, B3, B4, C1, C2) on every seed, each task "
    "through its adapter's acceptance check, in PostgreSQL (run) and Oracle (emitted, statically checked).",
)
def procedure_tasks(
    context: dg.AssetExecutionContext,
    build: dg.ResourceParam[BuildConfig],
    engines: EnginesResource,
    spider1_raw: SpiderInputs | None,
    procedure_seeds: ProcedureSeeds | None,
) -> ProcedureTasks | None:
    if procedure_seeds is None or not _selected(build, spider1_raw):
        return None
    with engines.open("postgres") as engine:
        tasks = build_tasks(build, spider1_raw, procedure_seeds, engine)
    section = summarize(tasks.databases, DIALECT_NAMES)
    context.add_output_metadata(
        {
            "tasks": sum(len(db.tasks) for db in tasks.databases),
            "scenarios": dg.MetadataValue.json(
                {k: {f: v[f] for f in ("released", "kill_rate")} for k, v in section["scenarios"].items()}
            ),
            "seconds": round(tasks.seconds, 1),
        }
    )
    return tasks


def _check(ok: bool, **metadata) -> dg.AssetCheckResult:
    values = {k: dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in metadata.items()}
    return dg.AssetCheckResult(passed=ok, metadata=values)


@dg.asset_check(
    asset=procedure_tasks,
    blocking=True,
    description="Every seed's reference, run again after the scenarios were built, reproduces its own call suite.",
)
def references_pass_their_suites(procedure_tasks: ProcedureTasks | None) -> dg.AssetCheckResult:
    failures = (
        {}
        if procedure_tasks is None
        else {seed: why for db in procedure_tasks.databases for seed, why in db.reference_failures.items()}
    )
    return _check(not failures, failures=dict(list(failures.items())[:50]), count=len(failures))


@dg.asset_check(
    asset=procedure_tasks,
    blocking=True,
    description=f"Per scenario and dialect, the call suites kill at least {MIN_KILL_RATE:.0%} of the references' "
    "procedural mutants (relational operator, boundary, dropped conjunct, swapped IF, removed DML, wrong column).",
)
def mutant_floor(procedure_tasks: ProcedureTasks | None) -> dg.AssetCheckResult:
    if procedure_tasks is None:
        return _check(True, below=[])
    section = summarize(procedure_tasks.databases, DIALECT_NAMES)
    rates = {k: v["kill_rate"] for k, v in section["scenarios"].items()}
    return _check(not below_floor(section), below=below_floor(section), kill_rates=rates)


@dg.asset_check(
    asset=procedure_tasks,
    blocking=True,
    description="No task's seed is passed by a trivial candidate (no-op, first call only, state change removed); "
    "the release gate runs them again on every released row through the evaluate path.",
)
def trivial_candidates_fail(procedure_tasks: ProcedureTasks | None) -> dg.AssetCheckResult:
    passed = (
        []
        if procedure_tasks is None
        else sorted(
            {
                f"{v.seed.seed_id}: {', '.join(v.strength.trivial_passed)}"
                for db in procedure_tasks.databases
                for v in db.seeds.seeds
                if v.strength.trivial_passed
            }
        )
    )
    return _check(not passed, passed_by_a_trivial_candidate=passed[:50], count=len(passed))


ASSETS = [procedure_seeds, procedure_tasks]
CHECKS = [references_pass_their_suites, mutant_floor, trivial_candidates_fail]
