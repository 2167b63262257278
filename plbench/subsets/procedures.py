"""Procedures as a subset: stored procedures that change state, graded after every call (ProcArena's core).

The stages are in plbench.procedures (stages: seeds, then every scenario adapter per database; rows: the
release rows). A task is one (scenario, seed) in one dialect, its source id `<scenario>/<seed id>`.

Counts: the subset's inputs are the lifted (gold query, archetype) candidates that did not become a seed
(each rejected once, with its reason: a lift failure counts once per gold query), plus one input per
validated seed and scenario. A (seed, scenario) an adapter refuses is rejected in every dialect with the
adapter's check; one released in some dialects only is rejected in the others as `not_in_dialect` (C2 is
graded on PostgreSQL; a seed whose Oracle text could not be made has no Oracle tasks). Gold queries of
a database that did not load are rejected as `database_not_loaded`.

Oracle rows are emitted and statically checked (and parsed by the release's grammar gate); their replay is
`not_run` with the reason. The trivial candidates (no-op, first call only, the reference without its state
change) are rendered from each seed's model and run by the release gate on every PostgreSQL row.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from plbench.config import DIALECT_NAMES, NO_ORACLE
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.seeds import SUBSET as NAME
from plbench.procedures.stages import ProcedureTasks
from plbench.procedures.strength import trivial_candidates
from plbench.procedures.summary import DIALECTS_OF, summarize
from plbench.records import Rejection
from plbench.subsets.base import Subset, SubsetRelease

ORACLE_NOT_REPLAYED = (
    "procedural tasks are not replayed on Oracle yet (no schema-per-run harness): emitted and statically checked only"
)


def _not_run_reason(config) -> str:
    return NO_ORACLE if config.oracle_dsn is None else ORACLE_NOT_REPLAYED


def _missing_dialects(stage: ProcedureTasks, released: set, refused: set) -> list[Rejection]:
    """A rejection for each (scenario, seed) and dialect that neither released it nor was refused."""
    out = []
    for database in stage.databases:
        for validated in database.seeds.seeds:
            seed = validated.seed
            for scenario in ADAPTERS:
                unit = f"{scenario}/{seed.seed_id}"
                for dialect in DIALECT_NAMES:
                    if unit in refused or (unit, dialect) in released:
                        continue
                    why = (
                        f"{scenario} is released in {', '.join(DIALECTS_OF[scenario])} only"
                        if scenario in DIALECTS_OF
                        else seed.lifted.oracle_problem or f"no {dialect} text of this seed"
                    )
                    out.append(
                        Rejection(NAME, unit, f"scenario_{scenario}", "not_in_dialect", why[:1000], dialect=dialect)
                    )
    return out


def release_part(config, raw, stage: ProcedureTasks) -> SubsetRelease:
    """Rows, rejections, validation and manifest section of the procedures built in `stage`."""
    tasks = [t for db in stage.databases for t in db.tasks]
    rows = [task_row(t, stage.engine_version) for t in tasks]
    rows = [r if r.dialect in stage.executed else r.with_(replay_detail=_not_run_reason(config)) for r in rows]
    scenario_rejections = [r for db in stage.databases for r in db.rejections]
    seed_rejections = stage.seeds.not_loaded + [r for db in stage.databases for r in db.seeds.rejections]
    missing = _missing_dialects(
        stage, {(r.source_id, r.dialect) for r in rows}, {r.source_id for r in scenario_rejections}
    )
    validated = sum(len(db.seeds.seeds) for db in stage.databases)
    rejections = seed_rejections + scenario_rejections + missing
    section = summarize(stage.databases, DIALECT_NAMES)
    section["databases"] = {"taking_part": len(stage.seeds.databases), "left_out": len(stage.seeds.left_out)}
    return SubsetRelease(
        NAME,
        len(seed_rejections) + validated * len(ADAPTERS),
        raw.inputs,
        rows,
        rejections,
        _validation(config, stage, rows),
        manifest={"procedures": section},
        trivial_candidates=_trivial(stage),
    )


def _validation(config, stage: ProcedureTasks, rows) -> dict[str, dict]:
    """Per dialect: the replay (references on their suites) and the mutants, where the references ran."""
    by_dialect: dict[str, list] = defaultdict(list)
    for row in rows:
        by_dialect[row.dialect].append(row)
    failed = sum(len(db.reference_failures) for db in stage.databases)
    out = {}
    for dialect in DIALECT_NAMES:
        mine = by_dialect[dialect]
        if dialect not in stage.executed:
            out[dialect] = {"replay": {"ran": False, "reason": _not_run_reason(config)}}
            continue
        replay = {"ran": True, "engine": stage.engine_version, "passed": len(mine), "failed": failed}
        mutants = {"total": sum(r.mutants_total for r in mine), "killed": sum(r.mutants_killed for r in mine)}
        out[dialect] = {"replay": replay, "mutants": mutants}
    return out


def _trivial(stage: ProcedureTasks) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(task id, dialect) -> the trivial candidates of its seed in the row's dialect, for the dialects the
    build runs (where the gate runs them)."""
    of_seed = {v.seed.seed_id: trivial_candidates(v.seed, v.suite) for db in stage.databases for v in db.seeds.seeds}
    return {
        (t.task_id, t.dialect): [(name, proc.render(t.dialect)) for name, proc in of_seed[t.seed_id].items()]
        for db in stage.databases
        for t in db.tasks
        if t.dialect in stage.executed
    }


class ProceduresSubset(Subset):
    name = NAME
    source_dataset = "Spider 1.0 (train and dev gold SQL)"
    licence = "CC-BY-SA-4.0"
    summary = (
        "stored procedures that change database state, lifted from Spider 1.0 gold SQL by archetypes, in eleven "
        "development scenarios (A1-A5, B1, B3, B4, C1, C2), each with a call suite from the database's own values "
        "recording after every call the error, the output and every user table's content hash, graded per call"
    )
    required_columns = ("database", "reference_code", "scenario", "materials", "call_suite", "statements", "cyclomatic")
    release_inputs = ("spider1_raw", "procedure_tasks")

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        if NAME not in config.subsets or values["spider1_raw"] is None or values["procedure_tasks"] is None:
            return None
        return release_part(config, values["spider1_raw"], values["procedure_tasks"])


SUBSET = ProceduresSubset()
