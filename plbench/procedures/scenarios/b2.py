"""B2 performance optimisation: the reference made slow, row by row, to be made fast again.

`current_procedure.sql` is the reference with each set-based statement that writes many rows turned into a
loop running one statement per row: an INSERT ... SELECT inserts the query's rows one at a time, an UPDATE
updates the rows its WHERE selects one at a time, by row id. It is correct (it reproduces the call suite).

Timing runs on a copy whose main table (the query's FROM table) holds its rows repeated up to SCALE_ROWS
rows (without its unique indexes), one copy per database, re-scaled when the main table changes. The
suite's first call that writes at least MIN_TIMED_WRITES rows there (counted in a run of the reference) is
timed after the calls before it, REPEATS times per procedure when a candidate is graded, BUILD_REPEATS times
when the build measures reference and baseline (the calls before it run once, and each repeat goes back to a
savepoint taken after them); a procedure's time is its fastest run. Work
counters over the copy's tables during that call come from PostgreSQL's pg_stat_xact_user_tables: scans =
seq_scan + idx_scan, tuples = seq_tup_read + idx_tup_fetch, writes = n_tup_ins + n_tup_upd + n_tup_del.

Check: the baseline reproduces the call suite, and the timed call makes it write at least MIN_TIMED_WRITES
rows one statement a row where the reference writes them set-based (a seed without such a call is
rejected, `too_little_work`). The decision is taken on these counts, never on a clock: a speedup measured
near MIN_SPEEDUP on a loaded machine flips from run to run, and two builds must release the same tasks.
The speedup measured is information (ScenarioTask.measured, the build stage's metadata `b2_timing`).
The task's call suite records the timing set-up and the counters of reference and baseline under
`performance` (times vary from run to run and are not recorded; an Oracle task carries its PostgreSQL
twin's, as no Oracle server runs here); grading a B2 candidate measures it,
the reference and the baseline in the same run and adds the speedups and all counters to its detail.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from psycopg import sql
from sqlglot import exp

from plbench.procedures.archetypes import main_table
from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.model import Procedure, RowLoop, Sql, rebuild
from plbench.procedures.tasks import AdapterContext, AdapterRejected, ScenarioTask, make_task, prompt, runs_here
from plbench.procedures.workspace import Workspace, undo_to

SCENARIO = "b2"
SCALE_ROWS, REPEATS, MIN_SPEEDUP = 10_000, 4, 1.1
# The build's speedup is information, its decision taken on counts: two runs guard it against one slow run, and
# the baseline's row-by-row runs were two thirds of B2's build time (a database's B2 seeds: 0.63 s of timing each).
BUILD_REPEATS = 2
MIN_TIMED_WRITES = 1_000
# Timing costs up to a second a seed (the baseline writes thousands of rows one at a time, 4 times): B2 is
# tried on at most this many seeds of a database (the rest: b2_database_cap).
MAX_PER_DATABASE = 4
ROW, ROW_ID, COLUMN = "plb_row", "plb_rid", "plb_c{}"
TIMED_SAVEPOINT = "plb_timed"
COUNTERS = ("scans", "tuples", "writes")


@dataclass(frozen=True)
class Work:
    seconds: float  # the fastest of the timed runs
    counters: dict[str, int]  # COUNTERS over the copy's tables during the call


def _leftmost_select(tree: exp.Expression) -> exp.Select | None:
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _numbered(query: exp.Expression) -> exp.Expression | None:
    """The query with its output columns named plb_c1, plb_c2, ...; None when renaming could change it
    (a star, or a clause that refers to an output column by its name)."""
    tree = query.copy()
    select = _leftmost_select(tree)
    if select is None or any(e.is_star for e in select.expressions):
        return None
    aliases = {e.alias for e in select.expressions if isinstance(e, exp.Alias)}
    if aliases & {c.name for c in tree.find_all(exp.Column) if not c.table}:
        return None
    select.set("expressions", [exp.alias_(e.unalias(), COLUMN.format(i)) for i, e in enumerate(select.expressions, 1)])
    return tree


def _insert_loop(statement: Sql) -> RowLoop | None:
    queries, inserts = {}, {}
    for dialect, tree in statement.trees.items():
        numbered = _numbered(tree.expression) if not isinstance(tree.expression, exp.Values) else None
        if numbered is None:
            return None
        columns = len(tree.this.expressions)
        row = exp.Tuple(expressions=[exp.column(COLUMN.format(i), table=ROW) for i in range(1, columns + 1)])
        queries[dialect] = numbered
        inserts[dialect] = exp.Insert(this=tree.this.copy(), expression=exp.Values(expressions=[row]))
    return RowLoop(queries, inserts, ROW)


def _update_loop(statement: Sql) -> RowLoop:
    queries, updates = {}, {}
    for dialect, tree in statement.trees.items():
        row_id = exp.column(PROCEDURE_TEXT[dialect].row_id)
        query = exp.select(exp.alias_(row_id, ROW_ID)).from_(tree.this.copy())
        if tree.args.get("where") is not None:
            query.set("where", tree.args["where"].copy())
        update = tree.copy()
        update.set("where", exp.Where(this=exp.EQ(this=row_id.copy(), expression=exp.column(ROW_ID, table=ROW))))
        queries[dialect], updates[dialect] = query, update
    return RowLoop(queries, updates, ROW)


LOOPS: dict[str, Callable[[Sql], RowLoop | None]] = {"insert": _insert_loop, "update": _update_loop}


def row_by_row(procedure: Procedure) -> Procedure | None:
    """The procedure with each INSERT ... SELECT and UPDATE done row by row (None when it has neither)."""
    looped = []

    def slow(statement):
        loop = LOOPS[statement.kind](statement) if isinstance(statement, Sql) and statement.kind in LOOPS else None
        looped.extend([loop] if loop else [])
        return loop or statement

    body = rebuild(procedure.body, slow)
    return procedure.with_body(body) if looped else None


def _counters(workspace: Workspace) -> dict[str, int]:
    schema = sql.Literal(workspace.schema).as_string(None)
    result = workspace.read(
        "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0), "
        "coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0), "
        f"coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_catalog.pg_stat_xact_user_tables "
        f"WHERE schemaname = {schema}"
    )
    if not result.ok:
        raise RuntimeError(f"cannot read the work counters: {result.error}")
    return dict(zip(COUNTERS, map(int, result.rows[0])))


def _difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in COUNTERS}


def writes_per_call(workspace: Workspace, setup: list[str], procedure: str, calls: list[str]) -> list[int]:
    """Rows each call writes in one run (writes counted by PostgreSQL, no state read in between), up to the
    first call that writes MIN_TIMED_WRITES rows (the one timed_call picks: the calls after it do not matter)."""
    seen, writes = [_counters(workspace)], []

    def after(index: int, result) -> bool:
        seen.append(_counters(workspace))
        writes.append(_difference(seen[-1], seen[-2])["writes"])
        return writes[-1] < MIN_TIMED_WRITES

    start = lambda: seen.append(_counters(workspace))  # noqa: E731
    trace = workspace.run(setup, procedure, calls, inspect=after, start=start, states=False)
    if trace.install_error:
        raise AdapterRejected("reference_does_not_install", trace.install_error)
    return writes


def timed(
    workspace: Workspace, setup: list[str], procedure: str, calls: list[str], index: int, repeats: int = REPEATS
) -> Work | str:
    """The fastest of `repeats` runs of call `index` after the calls before it, with its counters (the same
    each run); a text saying why when the procedure does not install or the timed call fails. The calls
    before it run once: each repeat runs the timed call under a savepoint, then goes back to it."""
    runs: list[tuple[float, dict, str | None]] = []

    def repeated() -> None:
        for _ in range(repeats):
            workspace.session.execute_own(f"SAVEPOINT {TIMED_SAVEPOINT}")
            before, began = _counters(workspace), time.perf_counter()
            error = workspace.call(calls[index], "").error
            runs.append((time.perf_counter() - began, _difference(_counters(workspace), before), error))
            workspace.session.execute_own(undo_to(TIMED_SAVEPOINT))
            if error:
                return

    def step(i: int, result) -> bool:
        if i == index - 1:
            repeated()
        return True

    start = repeated if index == 0 else None
    trace = workspace.run(setup, procedure, calls[:index], inspect=step, start=start, states=False)
    if trace.install_error or runs[-1][2]:
        return trace.install_error or f"the timed call raises {runs[-1][2]}"
    return Work(min(s for s, _, _ in runs), runs[0][1])


def timed_call(writes: list[int]) -> int:
    """The call to time: the first that writes at least MIN_TIMED_WRITES rows (enough work to tell the two
    apart; the calls before it, run first, write fewer); AdapterRejected when no call writes as many."""
    enough = [i for i, w in enumerate(writes) if w >= MIN_TIMED_WRITES]
    if not enough:
        raise AdapterRejected("too_little_work", f"the calls write {writes} rows on the scaled copy")
    return enough[0]


def scale_of(ctx: AdapterContext) -> dict[str, int]:
    """{main table: how many times over} for SCALE_ROWS rows; its rows as the suite's initial state counted
    them (a seed's setup adds columns and tables, never rows)."""
    table = main_table(ctx.seed.lifted).this.sql(dialect="postgres")
    if table not in ctx.workspace.tables:
        raise AdapterRejected("no_main_table", f"{table} is not a table of the database")
    rows = ctx.validated.suite.initial[table.strip('"')][0]
    if not rows:
        raise AdapterRejected("empty_main_table", f"{table} has no rows to scale")
    return {table: math.ceil(SCALE_ROWS / rows)}


def performance(ctx: AdapterContext, baseline: str) -> tuple[dict, dict]:
    """The timing set-up with the reference's and the baseline's work, and what this run measured (seconds,
    speedup: information, not a verdict); AdapterRejected when no call writes enough or a timed run fails."""
    scale = scale_of(ctx)
    workspace = ctx.scaled(scale)
    setup, reference = list(ctx.seed.setup["postgres"]), ctx.seed.procedure.render("postgres")
    calls = [r.call for r in ctx.validated.suite.expected]
    index = timed_call(writes_per_call(workspace, setup, reference, calls))
    fast, slow = (timed(workspace, setup, text, calls, index, BUILD_REPEATS) for text in (reference, baseline))
    for who, work in (("reference", fast), ("baseline", slow)):
        if isinstance(work, str):
            raise AdapterRejected("timing_failed", f"{who}: {work}")
    record = {
        "scale_rows": SCALE_ROWS,
        "scaled": scale,
        "timed_call": index,
        "repeats": REPEATS,
        "min_speedup": MIN_SPEEDUP,
        "work": {"reference": fast.counters, "baseline": slow.counters},
    }
    return record, {"reference_s": fast.seconds, "baseline_s": slow.seconds, "speedup": slow.seconds / fast.seconds}


def timing_summary(tasks: list[ScenarioTask]) -> dict:
    """The speedups this run measured, one a B2 seed (its tasks in every dialect share it), for the build
    stage's metadata."""
    speedups = sorted({t.seed_id: t.measured["speedup"] for t in tasks if t.scenario == SCENARIO}.values())
    if not speedups:
        return {"tasks": 0}
    return {
        "tasks": len(speedups),
        "speedup_min": round(speedups[0], 3),
        "speedup_median": round(speedups[len(speedups) // 2], 3),
        f"below_{MIN_SPEEDUP}": sum(1 for s in speedups if s < MIN_SPEEDUP),
    }


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    slow = row_by_row(ctx.seed.procedure)
    if slow is None or slow.dialects() != ctx.seed.dialects:
        raise AdapterRejected("not_applicable", f"{ctx.seed.archetype} has no set-based statement to loop")
    baseline = slow.render("postgres")
    if why := ctx.fails(baseline):
        raise AdapterRejected("baseline_incorrect", why)
    record, measured = performance(ctx, baseline)
    suite = {**ctx.suite_json, "performance": record}
    tasks = []
    for d in ctx.seed.dialects:
        materials = {"current_procedure.sql": slow.render(d)}
        ask = (
            f"The current procedure is correct but slow. Make it faster (at least {MIN_SPEEDUP}x on "
            f"{SCALE_ROWS:,} rows) without changing what it does."
        )
        text = prompt(ctx, d, ask, ctx.seed.requirement_lines, materials)
        task = make_task(ctx, SCENARIO, d, text, materials)
        tasks.append(dataclasses.replace(task, call_suite=suite, measured=measured))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    """The baseline is correct and slower (measured in `build`, which rejects it otherwise)."""
    current = task.materials["current_procedure.sql"]
    if current == task.reference_code or ROW not in current:
        raise AdapterRejected("baseline_not_row_by_row", "the current procedure has no row-by-row loop")
    if runs_here(task) and ctx.fails(current):
        raise AdapterRejected("baseline_incorrect", ctx.fails(current))
    if "performance" not in task.call_suite:
        raise AdapterRejected("no_performance_record", "the task records no timing set-up")


def timed_grade(engine, task, performance: dict, baseline: str, candidate: str, graded):
    """`graded` (a pass) with the candidate timed against the reference and the baseline on the task's
    scaled copy, all three in this run: speedups in the detail and in `metrics`, with every work counter."""
    with engine.session(reads=(task.db.schema_name,)) as session:
        workspace = Workspace(session, task.db)
        workspace.rescale(performance["scaled"])
        calls, index = list(task.calls), performance["timed_call"]
        texts = {"candidate": candidate, "reference": task.reference, "baseline": baseline}
        works = {who: timed(workspace, list(task.setup), text, calls, index) for who, text in texts.items()}
    if failed := {who: why for who, why in works.items() if isinstance(why, str)}:
        return dataclasses.replace(graded, detail=f"B2: not timed: {failed}", metrics={"timing_failed": failed})
    mine = works["candidate"].seconds
    metrics = {
        "speedup_over_baseline": round(works["baseline"].seconds / mine, 3),
        "speedup_over_reference": round(works["reference"].seconds / mine, 3),
        "seconds": {who: round(w.seconds, 6) for who, w in works.items()},
        "work": {who: w.counters for who, w in works.items()},
    }
    work = ", ".join(f"{who} " + "/".join(str(w.counters[k]) for k in COUNTERS) for who, w in works.items())
    detail = (
        f"B2: {metrics['speedup_over_baseline']}x the baseline's speed, {metrics['speedup_over_reference']}x "
        f"the reference's, at {performance['scale_rows']:,} rows; work ({'/'.join(COUNTERS)}): {work}"
    )
    return dataclasses.replace(graded, detail=detail, metrics=metrics)
