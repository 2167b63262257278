"""The procedures subset for one database: validated seeds, then every scenario adapter on every seed.

Counts reconcile per scenario and dialect: each (seed, scenario) either yields its task(s) or a rejection
named by the adapter's check (`<scenario>_<check>`, source id `<scenario>/<seed id>`, as the task's);
seeds themselves reconcile in `seeds`. The build stage runs seeds (`database_seeds`) and scenarios
(`scenario_tasks`) apart, each in its own workspace; `database_procedures` runs both in one.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field

from plbench.normalize.emit import NormalizedDatabase
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.seeds import SUBSET, DatabaseSeeds, ValidatedSeed, not_seedable, seeds_in, workspaces
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask
from plbench.procedures.workspace import Workspace
from plbench.records import Rejection


@dataclass
class DatabaseProcedures:
    seeds: DatabaseSeeds
    tasks: list[ScenarioTask] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)  # scenario-level
    reference_failures: dict[str, str] = field(default_factory=dict)  # seed id -> where its reference fails its suite


def seed_tasks(ctx: AdapterContext, scenarios=None, tried: Counter | None = None):
    """Every adapter's tasks for one seed, each through its adapter's acceptance check; `tried` counts the
    database's seeds each adapter was tried on, not_applicable ones aside (its MAX_PER_DATABASE caps them)."""
    tasks, rejections, tried = [], [], Counter() if tried is None else tried
    for name, adapter in ADAPTERS.items():
        if scenarios is not None and name not in scenarios:
            continue
        try:
            if tried[name] >= getattr(adapter, "MAX_PER_DATABASE", tried[name] + 1):
                raise AdapterRejected("database_cap", f"{name} was tried on {tried[name]} seeds of {ctx.pg_db.name}")
            tried[name] += 1
            made = adapter.build(ctx)
            for task in made:
                adapter.check(task, ctx)
            tasks += made
        except AdapterRejected as exc:
            tried[name] -= exc.check == "not_applicable"
            rejections.append(
                Rejection(
                    SUBSET, f"{name}/{ctx.seed.seed_id}", f"scenario_{name}", f"{name}_{exc.check}", exc.detail[:1000]
                )
            )
    return tasks, rejections


def database_procedures(
    engine, pg_db: NormalizedDatabase, oracle_db: NormalizedDatabase | None, equivalence: list, scenarios=None
) -> DatabaseProcedures:
    """Seeds and scenario tasks of one loaded database, in one workspace (and its shuffled twin)."""
    left_out = not_seedable(pg_db, equivalence)
    if left_out is not None:
        return DatabaseProcedures(left_out)
    with workspaces(engine, pg_db) as (workspace, shuffled), scaled_copies(engine, pg_db) as scaled:
        seeds = seeds_in(workspace, shuffled, pg_db, oracle_db, equivalence)
        return tasks_in(workspace, seeds, pg_db, oracle_db, frozenset({engine.dialect}), scaled, scenarios)


def scenario_tasks(
    engine, pg_db: NormalizedDatabase, oracle_db: NormalizedDatabase | None, seeds: DatabaseSeeds, scenarios=None
) -> DatabaseProcedures:
    """Every scenario's tasks of a database's validated seeds, in a fresh workspace."""
    with engine.session(reads=(pg_db.schema_name,)) as session, scaled_copies(engine, pg_db) as scaled:
        workspace = Workspace(session, pg_db)
        return tasks_in(workspace, seeds, pg_db, oracle_db, frozenset({engine.dialect}), scaled, scenarios)


def tasks_in(
    workspace: Workspace, seeds: DatabaseSeeds, pg_db, oracle_db, executed: frozenset, scaled, scenarios=None
) -> DatabaseProcedures:
    """The scenario tasks of `seeds`; each seed's reference is also run on its own suite (the build's check:
    the adapters ask the same, so the verdict is usually remembered already)."""
    out, tried = DatabaseProcedures(seeds), Counter()
    for validated in seeds.seeds:
        ctx = context(validated, pg_db, oracle_db, workspace, executed, scaled)
        tasks, rejections = seed_tasks(ctx, scenarios, tried)
        out.tasks += tasks
        out.rejections += rejections
        if why := ctx.fails(validated.seed.procedure.render("postgres")):
            out.reference_failures[validated.seed.seed_id] = why
    return out


def context(
    validated: ValidatedSeed, pg_db, oracle_db, workspace: Workspace, executed: frozenset, scaled=None
) -> AdapterContext:
    """What the adapters see; `executed`: the dialects whose engine runs in this build."""
    suite = validated.suite.to_json(validated.seed)
    verdicts = dict(validated.strength.verdicts)
    return AdapterContext(validated, pg_db, oracle_db, workspace, suite, executed, verdicts, scaled)


@contextlib.contextmanager
def scaled_copies(engine, pg_db: NormalizedDatabase):
    """`scaled({table: times})`: one more workspace of the database, opened on first use, re-scaled per ask."""
    with contextlib.ExitStack() as stack:
        held: list[Workspace] = []

        def scaled(scale: dict[str, int]) -> Workspace:
            if not held:
                held.append(Workspace(stack.enter_context(engine.session(reads=(pg_db.schema_name,))), pg_db))
            held[0].rescale(scale)
            return held[0]

        yield scaled
