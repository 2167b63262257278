"""A5 code composition: callable components (`<name>_part1`, `<name>_part2`, ...), one DML statement each;
the solver writes the procedure that coordinates them (order, guard, error).

The components are installed by the task's setup, so a candidate can call them. Checks: the components
compile and are callable (each called with the first call's arguments, without error), and a structural
check confirms the coordination code is absent (no call of another unit, no IF, no raise, no entry point).
"""

from __future__ import annotations

import re

from sqlglot import exp

from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.model import Procedure, Sql, walk
from plbench.procedures.suites import literal
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here

SCENARIO = "a5"
COORDINATION = re.compile(r"\b(CALL|IF|RAISE\w*|v_matches)\b", re.I)


def components(ctx: AdapterContext) -> list[Procedure]:
    proc = ctx.seed.procedure
    parts = [s for s in walk(proc.body) if isinstance(s, Sql)]
    if len(parts) < 2:
        raise AdapterRejected("not_applicable", "fewer than two statements to compose")
    return [Procedure(f"{proc.name}_part{i}"[:60], _params_used(proc, s), (s,)) for i, s in enumerate(parts, start=1)]


def _params_used(proc: Procedure, statement: Sql) -> tuple:
    names = {c.name for c in statement.trees["postgres"].find_all(exp.Column)}
    return tuple(p for p in proc.params if p.name in names)


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    parts = components(ctx)
    tasks = []
    for d in ctx.seed.dialects:
        text = "\n\n".join(p.render(d) for p in parts) + "\n"
        materials = {"components.sql": text}
        names = ", ".join(f"`{p.name}`" for p in parts)
        ask = f"Write the procedure by calling the installed components {names} in the right way."
        task = make_task(
            ctx,
            SCENARIO,
            d,
            prompt(ctx, d, ask, ctx.seed.requirement_lines, materials),
            materials,
            setup_extra=tuple(p.render(d) for p in parts),
        )
        tasks.append(task)
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    parts = components(ctx)
    text = task.materials["components.sql"]
    entry = re.compile(rf"\b{re.escape(ctx.seed.procedure.name)}\b(?!_part)")
    one_statement = all(len(p.body) == 1 and isinstance(p.body[0], Sql) for p in parts)
    if not one_statement or COORDINATION.search(text) or entry.search(text):
        raise AdapterRejected("coordination_present", "the components contain coordination code")
    if runs_here(task):
        args = ctx.validated.suite.args[0]
        by_name = dict(zip((p.name for p in ctx.seed.procedure.params), args))
        calls = [
            PROCEDURE_TEXT[task.dialect].call.format(
                name=p.name, args=", ".join(literal(by_name[q.name], q, task.dialect) for q in p.params)
            )
            for p in parts
        ]
        # the components are the build's own code (the reference's statements, writing only its tables):
        # installed at once on the seed's setup, as the build runs its procedures (Workspace.run_built)
        setup, installed = task.setup_sql[: -len(parts)], "\n".join(task.setup_sql[-len(parts) :])
        trace = ctx.workspace.run_built(list(setup), installed, calls, ctx.seed.writes)
        failed = trace.install_error or next((c.error for c in trace.calls if c.error), None)
        if failed:
            raise AdapterRejected("components_not_callable", str(failed))
