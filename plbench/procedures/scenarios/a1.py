"""A1 from scratch: the complete numbered requirement, no attachment.

Check: no attachment, and the requirement fully specifies the behaviour: it names the procedure, every
parameter, every table the reference reads and writes, and the defined error code when it raises one.
"""

from __future__ import annotations

from plbench.procedures.dialect_text import ERROR_CODES
from plbench.procedures.model import Raise, walk
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt

SCENARIO = "a1"


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    return [
        make_task(ctx, SCENARIO, d, prompt(ctx, d, "Write the procedure.", ctx.seed.requirement_lines, {}), {})
        for d in ctx.seed.dialects
    ]


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    if task.materials:
        raise AdapterRejected("has_attachment", f"materials {sorted(task.materials)}")
    seed = ctx.seed
    named = [seed.procedure.name, *(p.name for p in seed.procedure.params), *seed.lifted.tables, *seed.writes]
    named += [ERROR_CODES[s.error][task.dialect].raised for s in walk(seed.procedure.body) if isinstance(s, Raise)]
    missing = [n for n in named if n not in task.prompt]
    if missing:
        raise AdapterRejected("not_fully_specified", f"the requirement does not name {missing}")
