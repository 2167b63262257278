"""C1 SQL core -> procedure: the core query with `<argN>` holes, the names it writes in `constants.md`.

Check: the reference reproduces the core query's effect: after the first call that succeeds, the result
table holds exactly the core query's rows for that call's arguments (compared inside the same run, after
the same column types).
"""

from __future__ import annotations

from sqlglot import exp

from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.suites import literal
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here

SCENARIO = "c1"
ARCHETYPES = frozenset({"result_table", "raise_missing"})


def core_query(ctx: AdapterContext, dialect: str, values: tuple | None = None) -> str:
    """The lifted query with `<argN>` holes, or with `values` as literals."""
    params = {p.name: (i, p) for i, p in enumerate(ctx.seed.procedure.params, start=1)}
    tree = ctx.seed.lifted.trees[dialect].copy()
    for column in list(tree.find_all(exp.Column)):
        if column.name in params:
            i, p = params[column.name]
            hole = f"<arg{i}>" if values is None else literal(values[i - 1], p, dialect)
            column.replace(exp.Var(this=hole))
    return tree.sql(dialect=PROCEDURE_TEXT[dialect].sqlglot)


def constants(ctx: AdapterContext) -> str:
    lines = [f"- `<arg{i}>`: parameter `{p.name}`" for i, p in enumerate(ctx.seed.procedure.params, start=1)]
    lines.append(f"- RESULT_TABLE: `{ctx.seed.writes[0]}`, replaced by the query's rows on every call")
    return "# Constants\n\n" + "\n".join(lines) + "\n"


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    if ctx.seed.archetype not in ARCHETYPES:
        raise AdapterRejected("not_applicable", f"{ctx.seed.archetype} writes no query result")
    tasks = []
    for d in ctx.seed.dialects:
        materials = {"core.sql": core_query(ctx, d) + ";\n", "constants.md": constants(ctx)}
        text = prompt(ctx, d, "Lift the SQL core into the procedure.", ctx.seed.requirement_lines[:3], materials)
        tasks.append(make_task(ctx, SCENARIO, d, text, materials))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    if "<arg1>" not in task.materials["core.sql"]:
        raise AdapterRejected("no_holes", "core.sql has no <argN> hole")
    if runs_here(task) and (why := _effect_differs(ctx)):
        raise AdapterRejected("core_effect_differs", why)


def _effect_differs(ctx: AdapterContext) -> str:
    seed, suite = ctx.seed, ctx.validated.suite
    index = next((i for i, r in enumerate(suite.expected) if r.error is None), None)
    table, found = seed.writes[0], {}
    core = core_query(ctx, "postgres", suite.args[index])

    def compare(i: int, result) -> bool:
        if i == index:
            ctx.workspace.session.execute(
                f"CREATE TEMP TABLE plb_core (LIKE {table}); INSERT INTO plb_core SELECT * FROM ({core}) AS q"
            )
            q = ctx.workspace.query(
                f"SELECT (SELECT pg_catalog.sum(pg_catalog.hash_record_extended(r, 0)) FROM {table} r) "
                "IS NOT DISTINCT FROM (SELECT pg_catalog.sum(pg_catalog.hash_record_extended(c, 0)) FROM plb_core c)"
            )
            found["same"] = q.ok and bool(q.rows) and q.rows[0][0]
        return i < index

    ctx.workspace.run_built(
        list(seed.setup["postgres"]),
        seed.procedure.render("postgres"),
        [r.call for r in suite.expected],
        seed.writes,
        compare,
    )
    return "" if found.get("same") else f"after call {index + 1} {table} differs from the core query's rows"
