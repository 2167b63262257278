"""The procedures subset's build over the Spider 1.0 databases the build loads (procedure_seeds, then its stages).

`build_seeds`: per loaded database, every identical gold query lifted by every archetype, each seed with its
validated call suite and mutant score (plbench.procedures.seeds). `build_tasks`: every scenario adapter on
every seed (plbench.procedures.build), in PostgreSQL; Oracle tasks are emitted and statically checked.

`BuildConfig.procedure_databases` (PLBENCH_PROCEDURE_DATABASES) caps how many databases take part (0: all),
spread evenly over the name order so the sample spans the mirror; the others are named in `ProcedureSeeds.left_out`
and counted in the manifest, not in the rejections: they are not inputs of the subset.

`BuildConfig.procedure_workers` (PLBENCH_PROCEDURE_WORKERS) databases are built side by side, each in its own
sessions (plbench.procedures.parallel); the results keep the databases' order, so the output is the same for
any number of workers (which is why it is not part of the build fingerprint).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from plbench.config import BuildConfig
from plbench.normalize.emit import NormalizedDatabase, normalize
from plbench.procedures.build import DatabaseProcedures, scenario_tasks
from plbench.procedures.parallel import each_database
from plbench.procedures.seeds import SUBSET, DatabaseSeeds, database_seeds
from plbench.records import Rejection
from plbench.spider.stages import DatabaseReport, SpiderInputs, load_source


@dataclass
class ProcedureSeeds:
    databases: dict[str, DatabaseSeeds] = field(default_factory=dict)  # loaded database -> its seeds
    not_loaded: list[Rejection] = field(default_factory=list)  # gold queries of databases that did not load
    left_out: list[str] = field(default_factory=list)  # databases beyond the configured cap
    seconds: float = 0.0


@dataclass
class ProcedureTasks:
    seeds: ProcedureSeeds
    databases: list[DatabaseProcedures] = field(default_factory=list)
    executed: tuple[str, ...] = ()  # dialects whose references ran
    engine_version: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)  # the raw files read (relative path -> sha256)


def selected_databases(names, cap: int) -> tuple[list[str], list[str]]:
    """(databases taking part, databases left out) of `names`: every one when `cap` is 0, else `cap` spread
    evenly over the name order (so a capped build still spans the mirror), each list in name order."""
    names = sorted(names)
    if not cap or cap >= len(names):
        return names, []
    taken = [names[i * len(names) // cap] for i in range(cap)]
    return taken, [n for n in names if n not in set(taken)]


def databases_of(config: BuildConfig, inputs: SpiderInputs, name: str) -> tuple[NormalizedDatabase, ...]:
    """The database in PostgreSQL and Oracle, as normalization emits it."""
    source = load_source(config, inputs, name)
    return normalize(source, "postgres"), normalize(source, "oracle")


def build_seeds(
    config: BuildConfig, inputs: SpiderInputs, reports: dict[str, DatabaseReport], engine
) -> ProcedureSeeds:
    """Seeds of every selected database (`reports`: the PostgreSQL normalization reports by database)."""
    start = time.perf_counter()
    names, left_out = selected_databases(inputs.databases, config.procedure_databases)
    out = ProcedureSeeds(left_out=left_out)

    def seeds_of(name: str) -> DatabaseSeeds | list[Rejection]:
        report = reports[name]
        if not (report.load and report.load.verified):
            why = (report.load.error if report.load else report.not_run) or "loaded, but its rows did not verify"
            return _not_loaded(inputs, name, why)
        pg_db, oracle_db = databases_of(config, inputs, name)
        return database_seeds(engine, pg_db, oracle_db, report.equivalence)

    for name, found in zip(names, each_database(seeds_of, names, config.procedure_workers)):
        if isinstance(found, DatabaseSeeds):
            out.databases[name] = found
        else:
            out.not_loaded += found
    out.seconds = time.perf_counter() - start
    return out


def _not_loaded(inputs: SpiderInputs, name: str, why: str) -> list[Rejection]:
    seen, out = set(), []
    for q in inputs.gold_queries(name):
        if q.sql not in seen:
            seen.add(q.sql)
            out.append(Rejection(SUBSET, f"{q.split}/{q.source_id}", "procedure_seeds", "database_not_loaded", why))
    return out


def build_tasks(config: BuildConfig, inputs: SpiderInputs, seeds: ProcedureSeeds, engine) -> ProcedureTasks:
    """Every scenario's tasks of every database's seeds (`engine`: PostgreSQL, where the references run)."""
    out = ProcedureTasks(seeds, executed=(engine.dialect,), engine_version=engine.version(), inputs=inputs.inputs)

    def tasks_of(database: DatabaseSeeds) -> DatabaseProcedures:
        if not database.seeds:
            return DatabaseProcedures(database)
        pg_db, oracle_db = databases_of(config, inputs, database.database)
        return scenario_tasks(engine, pg_db, oracle_db, database)

    out.databases = each_database(tasks_of, list(seeds.databases.values()), config.procedure_workers)
    return out
