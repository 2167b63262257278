"""Procedures as a subset: stored procedures that change state, graded after every call (ProcArena's core).

A `StagedSubset` (assets/subsets.py makes `procedures_tasks` and `procedures_validation` from its stages):
- ingest: the validated seeds of the `procedure_seeds` asset (kept an asset of its own: the ILE and the
  interactive subsets start from the same seeds); the gold candidates that became no seed are rejected here;
- build: every scenario adapter on every seed, per database, in PostgreSQL (plbench.procedures.stages);
- validate: the release rows, one per scenario task and dialect (source id `<scenario>/<seed id>`), the
  validation per dialect and the manifest section `procedures`.

Counts: the subset's inputs are the lifted (gold query, archetype) candidates that did not become a seed
(each rejected once, with its reason: a lift failure counts once per gold query), plus one input per
validated seed and scenario. A (seed, scenario) an adapter refuses is rejected in every dialect with the
adapter's check; one released in some dialects only is rejected in the others as `not_in_dialect` (C2 is
graded on PostgreSQL; a seed whose Oracle text could not be made has no Oracle tasks). Gold queries of
a database that did not load are rejected as `database_not_loaded`.

Oracle rows are emitted and statically checked (and parsed by the release's grammar gate); where an Oracle
engine is configured the validate stage replays their references on it (plbench.procedures.oracle_replay:
a row that fails is rejected as `replay_validation` / `failed`), else their replay is `not_run` with the
reason. The trivial candidates (no-op, first call only, the reference without its state
change) are rendered from each seed's model and run by the release gate on every row whose reference ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from plbench.config import DIALECT_NAMES, NO_ORACLE, NotConfigured
from plbench.procedures.oracle_replay import replay_rows
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.scenarios.b2 import timing_summary
from plbench.procedures.seeds import SUBSET as NAME
from plbench.procedures.stages import ProcedureSeeds, ProcedureTasks, build_tasks
from plbench.procedures.strength import trivial_candidates, trivial_texts
from plbench.procedures.summary import DIALECTS_OF, recount, summarize
from plbench.procedures.tasks import runs_here
from plbench.records import Rejection
from plbench.spider.stages import SpiderInputs
from plbench.subsets.base import Staged, StagedSubset, Stages, SubsetRelease
from plbench.taskrow import TaskRow, by_dialect

ORACLE_NOT_REPLAYED = (
    "this subset's procedural tasks are not replayed on Oracle (the procedures subset's references are): "
    "emitted and statically checked only"
)


def not_run_reason(config) -> str:
    return NO_ORACLE if config.oracle_dsn is None else ORACLE_NOT_REPLAYED


@dataclass
class Ingested:
    raw: SpiderInputs
    seeds: ProcedureSeeds


def seed_rejections(seeds: ProcedureSeeds) -> list[Rejection]:
    return seeds.not_loaded + [r for db in seeds.databases.values() for r in db.rejections]


def validated_seeds(seeds: ProcedureSeeds) -> int:
    return sum(len(db.seeds) for db in seeds.databases.values())


def ingest(config, spider1_raw: SpiderInputs, procedure_seeds: ProcedureSeeds) -> Staged:
    """The validated seeds; every lifted candidate that became none is rejected with its reason."""
    rejected, validated = seed_rejections(procedure_seeds), validated_seeds(procedure_seeds)
    databases = {"taking_part": len(procedure_seeds.databases), "left_out": len(procedure_seeds.left_out)}
    details = {"databases": databases}
    return Staged(Ingested(spider1_raw, procedure_seeds), len(rejected) + validated, validated, rejected, details)


def built(tasks: ProcedureTasks) -> Staged:
    """The build's figures: seeds in, scenario tasks out (one per dialect), the adapters' rejections."""
    made = [t for db in tasks.databases for t in db.tasks]
    refused = [r for db in tasks.databases for r in db.rejections]
    released = {k: v["released"] for k, v in summarize(tasks.databases, DIALECT_NAMES)["scenarios"].items()}
    details = {"released": released, "b2_timing": timing_summary(made)}  # timing: information, no verdict
    return Staged(tasks, validated_seeds(tasks.seeds), len(made), refused, details)


def build(config, ingested: Ingested, engines: dict) -> Staged:
    """Every scenario adapter on every seed, run in PostgreSQL."""
    return built(build_tasks(config, ingested.raw, ingested.seeds, engines["postgres"]))


def validate(config, tasks: ProcedureTasks, engines: dict) -> Staged:
    """The subset's release part, the Oracle references replayed where an Oracle engine is configured; its
    rejections here are the `not_in_dialect` ones and the Oracle replay's failures (the seeds' and the
    adapters' come with the earlier stages: Stages.validation adds them)."""
    oracle = engines.get("oracle")
    part = release_part(config, tasks, None if isinstance(oracle, NotConfigured) else oracle)
    return Staged(part, len(part.rows) + len(part.rejections), len(part.rows), part.rejections)


def _missing_dialects(stage: ProcedureTasks, released: set, refused: set) -> list[Rejection]:
    """A rejection for each (scenario, seed) and dialect that neither released it nor was refused."""
    out = []
    for database in stage.databases:
        for validated in database.seeds.seeds:
            seed = validated.seed
            for scenario in ADAPTERS:
                unit = f"{scenario}/{seed.seed_id}"
                for target in DIALECT_NAMES:
                    if unit in refused or (unit, target) in released:
                        continue
                    why = (
                        f"{scenario} is released in {', '.join(DIALECTS_OF[scenario])} only"
                        if scenario in DIALECTS_OF
                        else seed.lifted.oracle_problem or f"no {target} text of this seed"
                    )
                    out.append(
                        Rejection(NAME, unit, f"scenario_{scenario}", "not_in_dialect", why[:1000], dialect=target)
                    )
    return out


def release_part(config, stage: ProcedureTasks, oracle=None) -> SubsetRelease:
    """Rows, `not_in_dialect` rejections, validation and manifest section of the procedures built in `stage`,
    the Oracle rows replayed on `oracle` when given; the input count covers the seeds' and the adapters'
    rejections too."""
    tasks = [t for db in stage.databases for t in db.tasks]
    rows = [task_row(t, stage.engine_version) for t in tasks]
    rows = [r if r.replay_status == "passed" else r.with_(replay_detail=not_run_reason(config)) for r in rows]
    adapters = [r for db in stage.databases for r in db.rejections]
    missing = _missing_dialects(stage, {(r.source_id, r.dialect) for r in rows}, {r.source_id for r in adapters})
    replayed = {}
    if oracle is not None:
        rows, failed, replayed["oracle"] = oracle_replayed(config, rows, oracle)
        missing += failed
    section = recount(summarize(stage.databases, DIALECT_NAMES), rows, adapters + missing, DIALECT_NAMES)
    section["databases"] = {"taking_part": len(stage.seeds.databases), "left_out": len(stage.seeds.left_out)}
    return SubsetRelease(
        NAME,
        len(seed_rejections(stage.seeds)) + validated_seeds(stage.seeds) * len(ADAPTERS),
        stage.inputs,
        rows,
        missing,
        validation_of(config, stage, rows, replayed),
        manifest={"procedures": section},
        trivial_candidates=_trivial(stage),
    )


def oracle_replayed(config, rows: list[TaskRow], engine) -> tuple[list[TaskRow], list[Rejection], dict]:
    """The rows with their Oracle replay (plbench.procedures.oracle_replay): a passing Oracle row says so, a
    failing one becomes a `replay_validation` rejection with the reason; and the replay's section."""
    version, oracle_rows = engine.version(), by_dialect(rows)[engine.dialect]
    verdicts = replay_rows(engine, oracle_rows, config.normalized_dir)
    kept, failed = [], []
    for row in rows:
        why = verdicts.get(row.key)
        if why is None:
            kept.append(row)
        elif why:
            rejection = Rejection(NAME, row.source_id, "replay_validation", "failed", why[:1000], dialect=row.dialect)
            failed.append(rejection)
        else:
            kept.append(row.with_(replay_status="passed", replay_engine=version, replay_detail=None))
    section = {"ran": True, "engine": version, "passed": len(oracle_rows) - len(failed), "failed": len(failed)}
    return kept, failed, section


def validation_of(config, stage: ProcedureTasks, rows, replayed: dict | None = None) -> dict[str, dict]:
    """Per dialect: the replay (references on their suites) and the mutants, where the references ran in the
    build; `replayed`: the replay sections of the dialects replayed in the validate stage (Oracle)."""
    grouped = by_dialect(rows)
    failed = sum(len(db.reference_failures) for db in stage.databases)
    out = {}
    for target in DIALECT_NAMES:
        mine = grouped[target]
        if target in (replayed or {}):
            out[target] = {"replay": replayed[target]}
            continue
        if target not in stage.executed:
            out[target] = {"replay": {"ran": False, "reason": not_run_reason(config)}}
            continue
        replay = {"ran": True, "engine": stage.engine_version, "passed": len(mine), "failed": failed}
        mutants = {"total": sum(r.mutants_total for r in mine), "killed": sum(r.mutants_killed for r in mine)}
        out[target] = {"replay": replay, "mutants": mutants}
    return out


def _trivial(stage: ProcedureTasks) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(task id, dialect) -> the trivial candidates of its seed in the row's dialect, for the tasks whose
    reference ran (where the gate runs them)."""
    of_seed = {v.seed.seed_id: trivial_candidates(v.seed, v.suite) for db in stage.databases for v in db.seeds.seeds}
    return {
        (t.task_id, t.dialect): trivial_texts(of_seed[t.seed_id], t.dialect)
        for db in stage.databases
        for t in db.tasks
        if runs_here(t)
    }


class ProceduresSubset(StagedSubset):
    name = NAME
    source_dataset = "Spider 1.0 (train and dev gold SQL)"
    licence = "CC-BY-SA-4.0"
    summary = (
        "stored procedures that change database state, lifted from Spider 1.0 gold SQL by archetypes, in eleven "
        "development scenarios (A1-A5, B1-B4, C1, C2), each with a call suite from the database's own values "
        "recording after every call the error, the output and every user table's content hash, graded per call"
    )
    required_columns = ("database", "reference_code", "scenario", "materials", "call_suite", "statements", "cyclomatic")
    stages = Stages(
        ingest=ingest,
        build=build,
        validate=validate,
        inputs=("spider1_raw", "procedure_seeds"),
        build_engines=("postgres",),
        validate_engines=("oracle",),
    )

    def released_manifest(self, part: SubsetRelease) -> dict[str, dict]:
        """The per-scenario counts taken again on the rows the release gates kept (trivial candidates, Oracle
        grammar), their rejections counted by reason."""
        section = recount(part.manifest[NAME], part.rows, part.rejections, DIALECT_NAMES)
        return {**part.manifest, NAME: section}


SUBSET = ProceduresSubset()
