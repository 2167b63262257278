"""A2 document-grounded: one fact of the behaviour moves from the requirement into `design_document.md`.

Each archetype has one fact (`FACTS`): the requirement text that states it, what the requirement says
instead, the document's sentence, and an implementation that ignores the fact. Checks: that
implementation differs from the reference on the call suite; the document holds no code; the prompt
no longer states the fact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from plbench.procedures.archetypes import SELECTED
from plbench.procedures.dialect_text import ERROR_CODES, PROCEDURE_TEXT
from plbench.procedures.model import Procedure, Raise, Sql, rebuild, walk
from plbench.procedures.scenarios.a3 import LEAKAGE
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here

SCENARIO = "a2"


@dataclass(frozen=True)
class Fact:
    stated: str  # how the requirement states it ({table} is the table written)
    instead: str  # what the requirement says in its place
    document: str
    ignored: Callable[[Procedure, str], Procedure]  # (reference, table written) -> an implementation ignoring it


def _without_first_delete(proc: Procedure, table: str) -> Procedure:
    first = next(s for s in _sql(proc) if s.kind == "delete")
    return proc.with_body(rebuild(proc.body, lambda s: None if s is first else s))


def _other_label(proc: Procedure, table: str) -> Procedure:
    def relabel(s):
        if not isinstance(s, Sql):
            return s
        trees = {
            d: t.transform(lambda n: exp.Literal.string("flagged") if n == exp.Literal.string(SELECTED) else n)
            for d, t in s.trees.items()
        }
        return Sql(s.kind, trees)

    return proc.with_body(rebuild(proc.body, relabel))


def _generic_error(proc: Procedure, table: str) -> Procedure:
    return proc.with_body(rebuild(proc.body, lambda s: Raise("generic", s.message) if isinstance(s, Raise) else s))


def _emptied_first(proc: Procedure, table: str) -> Procedure:
    delete = Sql("delete", {d: exp.delete(table, dialect=PROCEDURE_TEXT[d].sqlglot) for d in proc.dialects()})
    return proc.with_body((delete, *proc.body))


def _sql(proc: Procedure):
    return [s for s in walk(proc.body) if isinstance(s, Sql)]


_EMPTIED = Fact(
    "first removes every row of `{table}`, then inserts",
    "inserts",
    "The report table `{table}` holds only the latest call's rows: every call empties it before it inserts.",
    _without_first_delete,
)
FACTS = {
    "result_table": _EMPTIED,
    "raise_missing": Fact(
        f"(PostgreSQL: SQLSTATE '{ERROR_CODES['no_match']['postgres'].reported}'; "
        f"Oracle: RAISE_APPLICATION_ERROR({ERROR_CODES['no_match']['oracle'].raised}, ...))",
        "(with the error code the design document gives)",
        f"Error codes: a key that matches nothing raises SQLSTATE '{ERROR_CODES['no_match']['postgres'].reported}' "
        f"in PostgreSQL and RAISE_APPLICATION_ERROR({ERROR_CODES['no_match']['oracle'].raised}, <message>) in Oracle.",
        _generic_error,
    ),
    "status_update": Fact(
        f"to '{SELECTED}'",
        "to the selection label of the design document",
        f"The selection label written into review_status is '{SELECTED}'.",
        _other_label,
    ),
    "summary_row": Fact(
        "Earlier rows are never changed or removed.",
        "",
        "The summary table `{table}` is a log: earlier rows are never changed or removed.",
        _emptied_first,
    ),
}


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    fact = FACTS[ctx.seed.archetype]
    table = ctx.seed.writes[0]
    stated = fact.stated.format(table=table)
    lines = [line.replace(stated, fact.instead).strip() for line in ctx.seed.requirement_lines]
    if lines == list(ctx.seed.requirement_lines):
        raise AdapterRejected("fact_not_in_requirement", stated)
    materials = {"design_document.md": "# Design document\n\n" + fact.document.format(table=table) + "\n"}
    lines = [line for line in lines if line]
    return [
        make_task(
            ctx,
            SCENARIO,
            d,
            prompt(ctx, d, "Write the procedure; the design document holds facts it needs.", lines, materials),
            materials,
        )
        for d in ctx.seed.dialects
    ]


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    fact = FACTS[ctx.seed.archetype]
    document = task.materials["design_document.md"]
    if leak := LEAKAGE.search(document):
        raise AdapterRejected("document_has_code", leak.group(0)[:60])
    if fact.stated.format(table=ctx.seed.writes[0]) in task.prompt:
        raise AdapterRejected("fact_still_in_requirement", fact.stated)
    if runs_here(task):
        ignoring = fact.ignored(ctx.seed.procedure, ctx.seed.writes[0]).render(task.dialect)
        if not ctx.fails(ignoring):
            raise AdapterRejected("fact_does_not_matter", "an implementation ignoring the document passes")
