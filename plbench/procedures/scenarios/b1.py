"""B1 functional modification: the reference with one business rule reverted, and the rule as a change request.

The reverted rule is a killed mutant of a condition (an operator flipped, a boundary moved, a conjunct
dropped). Check: at least one call distinguishes the current code from the reference.
"""

from __future__ import annotations

from plbench.procedures.describe import expression
from plbench.procedures.mutants import boundary_shift, drop_conjunct, relational_flip
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here

SCENARIO = "b1"
RULE_OPERATORS = (relational_flip, boundary_shift, drop_conjunct)


def _reverted(ctx: AdapterContext):
    """The first rule-reverting mutant the suite kills (None when there is none)."""
    for operator in RULE_OPERATORS:
        for mutant in ctx.mutants(operator):
            if mutant.procedure.dialects() == ctx.seed.dialects and ctx.fails(mutant.procedure.render("postgres")):
                return mutant
    return None


def change_request(mutant) -> str:
    return (
        "# Change request\n\nThe procedure applies one business rule wrongly. Where it currently requires that "
        f"{expression(mutant.after)}, the rule is that {expression(mutant.before)}. Change only that; every other "
        "behaviour stays as it is.\n"
    )


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    mutant = _reverted(ctx)
    if mutant is None:
        raise AdapterRejected("no_revertible_rule", "no condition mutant that the call suite kills")
    tasks = []
    for d in ctx.seed.dialects:
        materials = {"current_procedure.sql": mutant.procedure.render(d), "change_request.md": change_request(mutant)}
        text = prompt(
            ctx,
            d,
            "Modify the current procedure as the change request asks.",
            ctx.seed.requirement_lines[:2],
            materials,
        )
        tasks.append(make_task(ctx, SCENARIO, d, text, materials, notes=(f"reverted: {mutant.description}",)))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    """Executed where the task's dialect runs here; elsewhere the current code must at least differ."""
    current = task.materials["current_procedure.sql"]
    if current == task.reference_code or (runs_here(task) and not ctx.fails(current)):
        raise AdapterRejected("current_code_passes", "no call distinguishes the current code from the reference")
