"""A4 template instantiation: a reusable skeleton with `{SLOT_n}` placeholders and the task's bindings in words.

The template is the reference with its task-specific parts cut out: the name, the parameter list, the
tables written, the inserted columns, and each query or condition. `slots.md` says what fills each slot
(the query in words, never as code). Checks: every binding matches a placeholder and every placeholder
has a binding; the template holds no target-specific name (no table, parameter or procedure name).
"""

from __future__ import annotations

import re

from sqlglot import exp

from plbench.procedures.describe import expression, query
from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.model import CountInto, Raise, Sql, walk
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt

SCENARIO = "a4"
SLOT = re.compile(r"\{SLOT_(\d+)\}")


def _fragments(ctx: AdapterContext, dialect: str) -> list[tuple[str, str, bool]]:
    """(text in the rendered reference, what fills it in words, whole word only), in the order they are cut."""
    proc, render = ctx.seed.procedure, PROCEDURE_TEXT[dialect]
    params = ", ".join(
        render.param.format(name=p.name, type=p.type[dialect], table=p.table[dialect], column=p.column[dialect])
        for p in proc.params
    )
    words = ", ".join(f"`{p.name}` of the type of `{p.table['postgres']}.{p.column['postgres']}`" for p in proc.params)
    out = [(proc.name, f"the procedure name `{proc.name}`", True), (f"({params})", f"the parameters {words}", False)]
    for s in walk(proc.body):
        if isinstance(s, Raise):
            out.append((s.message.replace("'", "''"), "a message saying which argument matched nothing", False))
        if not isinstance(s, (Sql, CountInto)):
            continue
        tree, pg = s.trees[dialect], s.trees["postgres"]
        if isinstance(tree, exp.Insert):
            columns = ", ".join(c.sql(dialect=render.sqlglot) for c in tree.this.expressions)
            out.append((f"({columns})", f"the columns ({columns}) of the table written", False))
            source = tree.expression
            said = query(pg.expression) if isinstance(pg.expression, exp.Select) else "the values the requirement lists"
            out.append((source.sql(dialect=render.sqlglot), f"the rows of: {said}", False))
        elif tree.args.get("where") is not None:
            condition = tree.args["where"].this
            words = f"the condition that {expression(pg.args['where'].this)}"
            out.append((condition.sql(dialect=render.sqlglot), words, False))
    tables = {
        t.sql(dialect=render.sqlglot): t.name
        for s in walk(proc.body)
        if isinstance(s, (Sql, CountInto))
        for t in s.trees[dialect].find_all(exp.Table)
    }
    out += [(text, f"the table `{name.lower()}`", True) for text, name in tables.items()]
    # longest first: a condition can be part of a query cut out as a whole
    return out[:1] + sorted(out[1:], key=lambda f: -len(f[0]))


def template(ctx: AdapterContext, dialect: str) -> tuple[str, str]:
    """(template.sql, slots.md) for one dialect."""
    text, bindings = ctx.seed.procedure.render(dialect), []
    for fragment, words, whole_word in _fragments(ctx, dialect):
        if fragment not in text:
            continue
        slot = f"{{SLOT_{len(bindings) + 1}}}"
        pattern = rf"(?<![\w.]){re.escape(fragment)}(?![\w])" if whole_word else re.escape(fragment)
        text = re.sub(pattern, slot, text)
        bindings.append(f"- `{slot}`: {words}")
    return _renumbered(text, bindings)


def _renumbered(text: str, bindings: list[str]) -> tuple[str, str]:
    """Slots numbered in the order they first appear in the template."""
    order = list(dict.fromkeys(SLOT.findall(text)))
    number = {old: str(new) for new, old in enumerate(order, start=1)}
    text = SLOT.sub(lambda m: f"{{SLOT_{number[m.group(1)]}}}", text)
    lines = sorted((SLOT.sub(lambda m: f"{{SLOT_{number[m.group(1)]}}}", b) for b in bindings), key=_slot_number)
    return text, "# Slots\n\n" + "\n".join(lines) + "\n"


def _slot_number(line: str) -> int:
    return int(SLOT.search(line).group(1))


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    tasks = []
    for d in ctx.seed.dialects:
        skeleton, slots = template(ctx, d)
        materials = {"template.sql": skeleton, "slots.md": slots}
        text = prompt(ctx, d, "Instantiate the template with the bindings.", ctx.seed.requirement_lines[:1], materials)
        tasks.append(make_task(ctx, SCENARIO, d, text, materials))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    placeholders = set(SLOT.findall(task.materials["template.sql"]))
    bound = set(SLOT.findall(task.materials["slots.md"]))
    if placeholders != bound or not bound:
        raise AdapterRejected("slots_do_not_match", f"placeholders {sorted(placeholders)}, bindings {sorted(bound)}")
    body = task.materials["template.sql"]
    names = [ctx.seed.procedure.name, *(p.name for p in ctx.seed.procedure.params), *ctx.seed.writes]
    names += [t.target.name for t in ctx.pg_db.tables]
    specific = [n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", body, re.I)]
    if specific:
        raise AdapterRejected("target_specific_body", f"the template names {specific}")
