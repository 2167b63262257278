"""Scenario tasks: one validated seed turned into one task per scenario and dialect by that scenario's adapter.

Every adapter keeps the seed's database, reference, call suite and initial state, and adds its own user
input and materials. Its acceptance check runs on every task it makes; a task that fails it is rejected
with the check's name (`<scenario>_<check>`). Tasks in Oracle are emitted with static checks only and
recorded as not_run (no Oracle execution without a server).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from plbench.dialects.static_checks import check_block_structure
from plbench.normalize.emit import NormalizedDatabase
from plbench.procedures.model import CountInto, IfElse, Raise, Sql, Todo, walk
from plbench.procedures.seeds import SUBSET, ValidatedSeed
from plbench.procedures.strength import fails_suite
from plbench.procedures.workspace import Workspace

DIALECT_NAMES = {"postgres": "PL/pgSQL (PostgreSQL)", "oracle": "Oracle PL/SQL"}
SCAFFOLD_TODO = "write the body"
ORACLE_NOT_RUN = "no Oracle server configured (PLBENCH_ORACLE_DSN): emitted and statically checked only"


class AdapterRejected(ValueError):
    """The adapter cannot make this task, or the task fails its acceptance check."""

    def __init__(self, check: str, detail: str):
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


@dataclass(frozen=True)
class ScenarioTask:
    task_id: str
    scenario: str
    dialect: str
    seed_id: str
    database: str
    prompt: str
    materials: dict[str, str]
    reference_code: str
    setup_sql: tuple[str, ...]
    entry_point: str
    call_suite: dict
    statements: int
    cyclomatic: int
    mutants_total: int
    mutants_killed: int
    replay_status: str
    replay_detail: str = ""
    notes: tuple[str, ...] = field(default=())
    scaffold: str = ""  # the signature with an empty body
    signature: tuple[tuple[str, str], ...] = ()  # (parameter, type) in the dialect
    constructs: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()  # tables read and written
    # what this run timed (B2: seconds and speedup): information for the build's metadata, never released,
    # since it varies from run to run
    measured: dict = field(default_factory=dict, compare=False)

    @property
    def source_id(self) -> str:
        """One input per (scenario, seed), as its release rows and its rejections name it."""
        return f"{self.scenario}/{self.seed_id}"


@dataclass
class AdapterContext:
    """What an adapter and its check may use: the seed, the databases, and a PostgreSQL workspace."""

    validated: ValidatedSeed
    pg_db: NormalizedDatabase
    oracle_db: NormalizedDatabase | None
    workspace: Workspace
    suite_json: dict = field(default_factory=dict)
    executed: frozenset[str] = frozenset()  # the dialects with an engine in this build (their code runs)
    verdicts: dict[str, str] = field(default_factory=dict)  # procedure text -> fails() answer
    # a workspace of the same database with tables repeated as asked ({table: times}), for timing (B2)
    scaled: Callable[[dict[str, int]], Workspace] | None = None
    checked: dict[str, object] = field(default_factory=dict)  # what `once` computed, by key

    def once(self, key: str, compute: Callable[[], object]) -> object:
        """`compute()`, the first time `key` is asked for: a check that is the same for the seed's task in
        every dialect (a rerun of the PostgreSQL reference) runs once for all of them."""
        if key not in self.checked:
            self.checked[key] = compute()
        return self.checked[key]

    def mutants(self, operator: Callable) -> list:
        """The seed's mutants by `operator` (a row of plbench.procedures.mutants), made once: B1 and B3 both
        look for a killed one among the same operators' mutants."""
        return self.once(f"mutants {operator.__name__}", lambda: operator(self.seed.procedure, {}))

    def runs(self, target: str) -> bool:
        """Whether code in the `target` dialect runs in this build."""
        return target in self.executed

    @property
    def seed(self):
        return self.validated.seed

    def fails(self, procedure_text: str) -> str:
        """'' when this PostgreSQL procedure reproduces the call suite, else where it first differs.

        Remembered per text: the suite is deterministic, and several adapters ask about the same code."""
        if procedure_text not in self.verdicts:
            self.verdicts[procedure_text] = fails_suite(self.workspace, self.seed, self.validated.suite, procedure_text)
        return self.verdicts[procedure_text]

    def schema(self, dialect: str) -> str:
        databases = {db.dialect: db for db in (self.pg_db, self.oracle_db) if db is not None}
        return "\n".join(databases[dialect].create_statements)


def runs_here(task: ScenarioTask) -> bool:
    """Whether the task's dialect was executed in this build (its checks can run code)."""
    return task.replay_status == "passed"


def requirement_text(lines) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1))


def prompt(ctx: AdapterContext, dialect: str, task: str, requirement_lines, materials: dict[str, str]) -> str:
    """The prompt every scenario shares: what to write, the schema, the numbered requirement, the materials."""
    proc = ctx.seed.procedure
    attached = ", ".join(f"`{name}`" for name in sorted(materials))
    setup = "\n".join(ctx.seed.setup[dialect])
    parts = [
        f"{task} The target is {DIALECT_NAMES[dialect]}: a stored procedure named `{proc.name}` "
        f"on database `{ctx.pg_db.name}`.",
        f"Schema:\n{ctx.schema(dialect)}",
        f"Before the first call the task's setup has run:\n{setup}",
        "Requirement:\n" + requirement_text(requirement_lines),
    ]
    if materials:
        parts.append(f"Attached: {attached}.")
    return "\n\n".join(parts)


def make_task(
    ctx: AdapterContext,
    scenario: str,
    dialect: str,
    prompt_text: str,
    materials: dict[str, str],
    setup_extra: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
) -> ScenarioTask:
    seed, strength = ctx.seed, ctx.validated.strength
    reference = seed.procedure.render(dialect)
    # the same for the seed's every task in this dialect: checked and rendered once
    problems = ctx.once(f"reference static problems {dialect}", lambda: check_block_structure(reference))
    scaffold = ctx.once(f"scaffold {dialect}", lambda: seed.procedure.with_body((Todo(SCAFFOLD_TODO),)).render(dialect))
    if problems:
        raise AdapterRejected("static_check", "; ".join(problems))
    ran = ctx.runs(dialect)
    return ScenarioTask(
        task_id=f"{SUBSET}/{scenario}/{seed.seed_id}",
        scenario=scenario,
        dialect=dialect,
        seed_id=seed.seed_id,
        database=ctx.pg_db.name,
        prompt=prompt_text,
        materials=dict(sorted(materials.items())),
        reference_code=reference,
        setup_sql=tuple(seed.setup[dialect]) + setup_extra,
        entry_point=seed.procedure.name,
        call_suite=ctx.suite_json,
        statements=seed.procedure.statements,
        cyclomatic=seed.procedure.cyclomatic,
        mutants_total=strength.total,
        mutants_killed=strength.killed,
        replay_status="passed" if ran else "not_run",
        replay_detail="" if ran else ORACLE_NOT_RUN,
        notes=notes,
        scaffold=scaffold,
        signature=tuple((p.name, p.type[dialect]) for p in seed.procedure.params),
        constructs=constructs(seed.procedure),
        tables=tuple(dict.fromkeys([*seed.lifted.tables, *seed.writes])),
    )


_CONSTRUCTS = {Sql: "dml", CountInto: "select_into", IfElse: "if_else", Raise: "raise_error"}


def constructs(procedure) -> tuple[str, ...]:
    """The PL/SQL constructs the reference uses (procedure, dml_insert, if_else, ...)."""
    found = {"procedure"}
    for s in walk(procedure.body):
        name = _CONSTRUCTS.get(type(s))
        found.add(f"{name}_{s.kind}" if isinstance(s, Sql) else name)
    return tuple(sorted(found))
