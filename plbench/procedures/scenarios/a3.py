"""A3 example-guided: `examples.md` shows a starting state and what the first calls of the suite did.

The starting state lists the tables the procedure reads and writes (long ones truncated "... n more
rows"); each shown call lists, per table, the row diff (`n row(s) changed: key | col: old -> new`,
`added`, `removed`, or `unchanged`) and the error it raised. Checks: the reference reproduces every
example, and a leakage check rejects PL/SQL text. The examples come from one run of the reference that
must reproduce the recorded suite's first calls (initial state, then each shown call's error, output and
every table's state hash), which two fresh runs and a shuffled copy gave alike (plbench.procedures.suites):
the task's examples must be that run's, made once per seed for its tasks in every dialect.
"""

from __future__ import annotations

import re
from collections import Counter

from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt

SCENARIO = "a3"
SHOWN_CALLS = 2
SHOWN_ROWS = 8
LEAKAGE = re.compile(
    r"\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|SELECT\s.+\sFROM|BEGIN|END\s+IF|RAISE|LANGUAGE)\b", re.I | re.S
)


def _cell(value) -> str:
    return "NULL" if value is None else str(value)


def _rows(ctx: AdapterContext, table: str) -> tuple[list[str], list[tuple]]:
    result = ctx.workspace.read(f"SELECT r.* FROM {ctx.workspace.schema}.{table} AS r ORDER BY r")
    return result.columns, [tuple(_cell(v) for v in row) for row in result.rows]


def _table_text(table: str, columns: list[str], rows: list[tuple]) -> str:
    lines = [f"### {table} ({len(rows)} row{'s' if len(rows) != 1 else ''})", " | ".join(columns)]
    lines += [" | ".join(r) for r in rows[:SHOWN_ROWS]]
    if len(rows) > SHOWN_ROWS:
        lines.append(f"... {len(rows) - SHOWN_ROWS} more rows")
    return "\n".join(lines)


def _diff(ctx: AdapterContext, table: str, columns: list[str], before: list[tuple], after: list[tuple]) -> str:
    keys = [columns.index(k.strip('"')) for k in ctx.workspace.db.keys.get(table, ()) if k.strip('"') in columns]
    if before == after:
        return f"{table}: unchanged"
    parts = []
    if keys:
        old = {tuple(r[i] for i in keys): r for r in before}
        new = {tuple(r[i] for i in keys): r for r in after}
        changed = [
            f"{' | '.join(k)} | " + ", ".join(f"{c}: {a} -> {b}" for c, a, b in zip(columns, old[k], new[k]) if a != b)
            for k in sorted(old.keys() & new.keys())
            if old[k] != new[k]
        ]
        added = [new[k] for k in sorted(new.keys() - old.keys())]
        removed = [old[k] for k in sorted(old.keys() - new.keys())]
    else:
        changed = []
        added = sorted((Counter(after) - Counter(before)).elements())
        removed = sorted((Counter(before) - Counter(after)).elements())
    for n, what, items in (
        (len(changed), "changed", changed),
        (len(added), "added", added),
        (len(removed), "removed", removed),
    ):
        if n:
            shown = [i if isinstance(i, str) else "(" + ", ".join(i) + ")" for i in items[:SHOWN_ROWS]]
            more = f"; ... {n - SHOWN_ROWS} more" if n > SHOWN_ROWS else ""
            parts.append(f"{n} row(s) {what}: " + "; ".join(shown) + more)
    return f"{table}: " + "; ".join(parts)


def _call_label(ctx: AdapterContext, args: tuple) -> str:
    named = ", ".join(f"{p.name} => {_cell(v)}" for p, v in zip(ctx.seed.procedure.params, args))
    return f"{ctx.seed.procedure.name}({named})"


def examples(ctx: AdapterContext) -> str:
    """examples.md from a run of the reference: the starting state, then the first calls' effects."""
    seed, suite = ctx.seed, ctx.validated.suite
    tables = list(dict.fromkeys([*seed.writes, *seed.lifted.tables]))
    snapshots: list[dict] = []

    def snapshot() -> None:  # the reference changes only the tables it writes (suites.run_seed): others read once
        snapshots.append({t: snapshots[0][t] if snapshots and t not in seed.writes else _rows(ctx, t) for t in tables})

    def look(index: int, result) -> bool:
        snapshot()
        return index + 1 < SHOWN_CALLS

    calls = [r.call for r in suite.expected]
    trace = ctx.workspace.run_built(
        list(seed.setup["postgres"]), seed.procedure.render("postgres"), calls, seed.writes, look, snapshot
    )
    recorded = [r.observed() for r in suite.expected[: len(trace.calls)]]
    if trace.initial != suite.initial or [r.observed() for r in trace.calls] != recorded:
        raise AdapterRejected("examples_not_reproduced", "the run showing the examples is not the recorded suite's")
    parts = ["# Examples", "## Starting state"]
    parts += [_table_text(t, *snapshots[0][t]) for t in tables]
    for i in range(1, len(snapshots)):
        result = suite.expected[i - 1]
        parts.append(f"## Call {i}: {_call_label(ctx, suite.args[i - 1])}")
        parts.append(f"Raises: error {result.error}" if result.error else "Raises: nothing")
        for t in tables:
            parts.append(_diff(ctx, t, snapshots[i - 1][t][0], snapshots[i - 1][t][1], snapshots[i][t][1]))
    return "\n\n".join(parts) + "\n"


def _examples_once(ctx: AdapterContext) -> str:
    return ctx.once("a3 examples", lambda: examples(ctx))


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    shown = _examples_once(ctx)
    materials = {"examples.md": shown}
    return [
        make_task(
            ctx,
            SCENARIO,
            d,
            prompt(ctx, d, "Write the procedure the examples show.", ctx.seed.requirement_lines[:2], materials),
            materials,
        )
        for d in ctx.seed.dialects
    ]


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    shown = task.materials["examples.md"]
    if shown != _examples_once(ctx):
        raise AdapterRejected("examples_not_reproduced", "the reference's run shows other examples")
    if leak := LEAKAGE.search(shown):
        raise AdapterRejected("leakage", f"examples.md contains code: {leak.group(0)[:60]}")
