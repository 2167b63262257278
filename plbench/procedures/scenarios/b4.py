"""B4 completion: the reference with one DML statement replaced by a TODO that says what it must do.

Check: the missing region changes behaviour (the code with the TODO left empty fails the call suite).
"""

from __future__ import annotations

from plbench.procedures.model import Sql, Todo, rebuild, walk
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here

SCENARIO = "b4"
TODO_TEXT = {
    "insert": "insert the rows the requirement describes",
    "update": "update the rows the requirement describes",
    "delete": "remove the rows the requirement says to remove",
}


def with_todo(ctx: AdapterContext):
    """The procedure with its last DML statement (the one that writes the result) as a TODO."""
    target = [s for s in walk(ctx.seed.procedure.body) if isinstance(s, Sql)][-1:]
    if not target:
        raise AdapterRejected("no_region", "the reference has no DML statement")

    def change(s):
        return Todo(TODO_TEXT[s.kind]) if s is target[0] else s

    return ctx.seed.procedure.with_body(rebuild(ctx.seed.procedure.body, change))


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    skeleton = with_todo(ctx)
    tasks = []
    for d in ctx.seed.dialects:
        materials = {"incomplete_procedure.sql": skeleton.render(d)}
        text = prompt(ctx, d, "Complete the procedure where it says TODO.", ctx.seed.requirement_lines, materials)
        tasks.append(make_task(ctx, SCENARIO, d, text, materials))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    skeleton = task.materials["incomplete_procedure.sql"]
    if "TODO" not in skeleton or skeleton == task.reference_code:
        raise AdapterRejected("region_not_removed", "the incomplete procedure has no TODO")
    if runs_here(task) and not ctx.fails(skeleton):
        raise AdapterRejected("region_does_not_matter", "the procedure without the region passes the call suite")
