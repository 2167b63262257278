"""Seeds of one database: every validated gold query lifted, every archetype that applies, each with a call suite.

A gold query is a seed source only when its PostgreSQL text was proven identical to SQLite's answer. Each
(query, archetype) pair either becomes a validated seed (reference installs, a call suite of at least
three informative calls, deterministic) or a rejection with its reason.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from plbench.normalize.emit import NormalizedDatabase
from plbench.procedures.archetypes import ARCHETYPES, OutputColumn, Seed
from plbench.procedures.lift import Lifted, LiftError, lift
from plbench.procedures.strength import Strength, measure, strengthen
from plbench.procedures.suites import CallSuite, SuiteRejected, build_suite
from plbench.procedures.workspace import Workspace
from plbench.records import Rejection

SUBSET = "procedures"
MAX_ROWS = 20_000  # a database copied per workspace; larger ones are left out (named in the rejections)
MAX_SEEDS_PER_DATABASE = 16
# A seed is released only when its suite kills this share of its mutants (after strengthening): a
# predicate the database's rows cannot tell from its flip (an empty table, a count that is 0 either way)
# makes a task that a wrong procedure passes.
MIN_SEED_KILL_RATE = 0.95


@dataclass
class ValidatedSeed:
    seed: Seed
    suite: CallSuite
    strength: Strength


@dataclass
class DatabaseSeeds:
    database: str
    seeds: list[ValidatedSeed] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    considered: int = 0  # (gold query, archetype) pairs tried


def _reject(out: DatabaseSeeds, source_id: str, code: str, detail: str) -> None:
    out.rejections.append(Rejection(SUBSET, source_id, "procedure_seeds", code, detail[:1000]))


def _output(workspace: Workspace, lifted: Lifted, postgres_sql: str) -> list[OutputColumn]:
    described = workspace.query(f"SELECT * FROM ({postgres_sql}) AS plb_q LIMIT 0")
    if not described.ok:
        raise LiftError("gold_fails_on_postgres", str(described.error))
    return [OutputColumn(n, t) for n, t in zip(described.columns, described.types)]


def _unique_gold(equivalence: list) -> list:
    """Identical gold queries, each SQL text once (train repeats a query for each paraphrase)."""
    seen, out = set(), []
    for result in equivalence:
        if result.cls == "identical" and result.postgres_sql not in seen:
            seen.add(result.postgres_sql)
            out.append(result)
    return out


def database_seeds(
    engine, pg_db: NormalizedDatabase, oracle_db: NormalizedDatabase | None, equivalence: list
) -> DatabaseSeeds:
    """Validated seeds of one loaded database (`equivalence`: its gold queries' EquivalenceResults)."""
    left_out = not_seedable(pg_db, equivalence)
    if left_out is not None:
        return left_out
    with workspaces(engine, pg_db) as (workspace, shuffled):
        return seeds_in(workspace, shuffled, pg_db, oracle_db, equivalence)


@contextlib.contextmanager
def workspaces(engine, pg_db: NormalizedDatabase):
    """A workspace and a physically shuffled one on the same database, each in its own session."""
    reads = (pg_db.schema_name,)
    with engine.session(reads=reads) as session, engine.session(reads=reads) as other:
        yield Workspace(session, pg_db), Workspace(other, pg_db, shuffled=True)


def seeds_in(
    workspace: Workspace,
    shuffled: Workspace,
    pg_db: NormalizedDatabase,
    oracle_db: NormalizedDatabase | None,
    equivalence: list,
) -> DatabaseSeeds:
    out = DatabaseSeeds(pg_db.name)
    taken = {t.target.name.lower() for t in pg_db.tables}
    for g in _unique_gold(equivalence):
        source_id = f"{g.query.split}/{g.query.source_id}"
        if len(out.seeds) >= MAX_SEEDS_PER_DATABASE:
            _reject(out, source_id, "database_seed_cap", f"{pg_db.name} has {MAX_SEEDS_PER_DATABASE} seeds")
            continue
        try:
            lifted = lift(source_id, g.query.question, g.query.sql, g.postgres_sql, g.oracle_sql, pg_db, oracle_db)
            output = _output(workspace, lifted, g.postgres_sql)
        except LiftError as exc:
            _reject(out, source_id, exc.reason_code, exc.detail)
            continue
        for name, build in ARCHETYPES:
            seed_id = f"{pg_db.name}/{source_id}/{name}"
            try:
                seed = build(lifted, output, taken, f"{pg_db.name}/{source_id}")
            except LiftError as exc:
                if exc.reason_code != "not_applicable":
                    out.considered += 1
                    _reject(out, seed_id, exc.reason_code, exc.detail)
                continue
            out.considered += 1
            try:
                out.seeds.append(validate(seed, workspace, shuffled))
            except SuiteRejected as exc:
                _reject(out, seed_id, exc.reason_code, exc.detail)
    return out


def not_seedable(pg_db: NormalizedDatabase, equivalence: list) -> DatabaseSeeds | None:
    """The rejections of a database no seed is built from, without running anything (None when seeds may
    come from it): too large to copy per run, or without a row (every predicate then matches nothing whatever
    its arguments, so no call suite tells a mutant from the reference)."""
    rows = sum(len(t.rows) for t in pg_db.tables)
    if rows > MAX_ROWS:
        code, detail = "database_too_large", f"{pg_db.name}: {rows} rows"
    elif rows == 0:
        code, detail = "database_empty", f"{pg_db.name}: no table has a row"
    else:
        return None
    out = DatabaseSeeds(pg_db.name)
    for g in _unique_gold(equivalence):
        _reject(out, f"{g.query.split}/{g.query.source_id}", code, detail)
    return out


def validate(seed: Seed, workspace: Workspace, shuffled: Workspace, explored=None) -> ValidatedSeed:
    """Call suite, strengthened against surviving mutants; SuiteRejected when a trivial candidate passes
    (`explored`: the candidate calls' run when it was made already, suites.explore)."""
    suite = build_suite(seed, workspace, shuffled, explored)
    strength = measure(workspace, seed, suite)
    if strength.surviving:
        stronger = strengthen(workspace, shuffled, seed, suite, strength.surviving)
        if stronger is not suite:
            suite, strength = stronger, measure(workspace, seed, stronger, strength)
    if strength.trivial_passed:
        raise SuiteRejected("trivial_candidate_passes", ", ".join(strength.trivial_passed))
    if strength.kill_rate < MIN_SEED_KILL_RATE:
        survivors = "; ".join(strength.survivors)
        raise SuiteRejected("weak_suite", f"{strength.killed}/{strength.total} mutants killed; survivors: {survivors}")
    return ValidatedSeed(seed, suite, strength)
