"""C2 Oracle -> PostgreSQL: the Oracle reference as `source_oracle.sql`, translated and graded on PostgreSQL.

Check: the Oracle source passes the server-free static checks and renders the same procedure model as the
PostgreSQL reference (same name, parameters and statement count), and that reference reproduces the call
suite. The Oracle source itself is not run here (no Oracle server).
"""

from __future__ import annotations

from plbench.dialects.static_checks import check_block_structure
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt

SCENARIO = "c2"
SOURCE, TARGET = "oracle", "postgres"


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    if SOURCE not in ctx.seed.dialects:
        raise AdapterRejected("no_oracle_source", ctx.seed.lifted.oracle_problem or "no Oracle text")
    materials = {"source_oracle.sql": ctx.seed.procedure.render(SOURCE)}
    text = prompt(
        ctx, TARGET, "Translate the Oracle procedure to PostgreSQL.", ctx.seed.requirement_lines[:2], materials
    )
    return [make_task(ctx, SCENARIO, TARGET, text, materials, notes=("the Oracle source was not run",))]


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    source = task.materials["source_oracle.sql"]
    if problems := check_block_structure(source):
        raise AdapterRejected("source_static_check", "; ".join(problems))
    proc = ctx.seed.procedure
    if f"PROCEDURE {proc.name}(" not in source or any(p.name not in source for p in proc.params):
        raise AdapterRejected("source_signature_differs", "the Oracle source has another name or parameters")
    if why := ctx.fails(task.reference_code):
        raise AdapterRejected("translation_fails", why)
