"""B3 repair: the reference with a logic flip and a compile error, the error text and the observed behaviour.

`error.txt` is what installing the buggy code on PostgreSQL printed; `observed_behaviour.md` is the
first diverging call of the logic flip alone, graded like a candidate. Oracle tasks carry the logic flip
only (no Oracle server compiles here), with the behaviour observed on the PostgreSQL twin.
Check: the buggy code fails (does not install, or diverges) and the reference passes.

A submission is either a whole procedure or line edits of `buggy_procedure.sql` (`submitted`), as JSON:
`{"edits": [{"line": 3, "old": "<line 3 as it is>", "new": "<its replacement>"}, ...]}`. Lines count from
1 in the buggy code; every edit names a line of it (each line at most once) and repeats its text in `old`,
so a misplaced edit is refused rather than applied; `new` may hold several lines, or be null to delete
the line. A malformed submission fails the task with a detail naming it and what is wrong.
"""

from __future__ import annotations

import json

from plbench.procedures.grade import ProcedureTask, grade_in
from plbench.procedures.mutants import boundary_shift, relational_flip, swap_if
from plbench.procedures.tasks import (
    AdapterContext,
    AdapterRejected,
    ScenarioTask,
    make_task,
    prompt,
    runs_here,
)

SCENARIO = "b3"
LOGIC_FLIPS = (relational_flip, swap_if, boundary_shift)
# (text, replacement, what the slip is): the first that appears in the code is applied
COMPILE_SLIPS = (
    ("END IF;", "END;", "END IF; written as END;"),
    ("INSERT INTO", "INSERT INOT", "INTO misspelt"),
    ("UPDATE ", "UPDTE ", "UPDATE misspelt"),
)


def _flip(ctx: AdapterContext):
    for operator in LOGIC_FLIPS:
        for mutant in ctx.mutants(operator):
            if ctx.fails(mutant.procedure.render("postgres")):
                return mutant
    return None


def _slip(text: str) -> tuple[str, str]:
    for old, new, what in COMPILE_SLIPS:
        if old in text:
            return text.replace(old, new, 1), what
    raise AdapterRejected("no_compile_slip", "no keyword to misspell")


def _observed(ctx: AdapterContext, text: str) -> str:
    task = ProcedureTask(
        ctx.seed.seed_id,
        ctx.workspace.db,
        tuple(ctx.seed.setup["postgres"]),
        ctx.seed.procedure.render("postgres"),
        tuple(r.call for r in ctx.validated.suite.expected),
        tuple(r.observed() for r in ctx.validated.suite.expected),
        ctx.seed.writes,
    )
    result = grade_in(ctx.workspace, task, text, built=True)
    verdicts = ", ".join(f"call {i}: {v}" for i, v in enumerate(result.call_verdicts, start=1))
    return f"# Observed behaviour\n\nOn the test calls: {verdicts}.\nFirst difference: {result.detail}.\n"


def build(ctx: AdapterContext) -> list[ScenarioTask]:
    flip = _flip(ctx)
    if flip is None:
        raise AdapterRejected("no_logic_flip", "no logic flip that the call suite kills")
    pg_flipped = flip.procedure.render("postgres")
    observed = _observed(ctx, pg_flipped)
    buggy, slip = _slip(pg_flipped)
    installed = ctx.workspace.run_built(list(ctx.seed.setup["postgres"]), buggy, [], ctx.seed.writes)
    if installed.install_error is None:
        raise AdapterRejected("compile_slip_compiles", f"{slip} still installs")
    compiled = {ctx.pg_db.dialect: {"buggy_procedure.sql": buggy, "error.txt": installed.install_error + "\n"}}
    tasks = []
    for d in ctx.seed.dialects:
        materials = compiled.get(d, {"buggy_procedure.sql": flip.procedure.render(d)}) | {
            "observed_behaviour.md": observed
        }
        text = prompt(ctx, d, "Repair the buggy procedure.", ctx.seed.requirement_lines, materials)
        tasks.append(make_task(ctx, SCENARIO, d, text, materials, notes=(f"logic flip: {flip.description}",)))
    return tasks


def check(task: ScenarioTask, ctx: AdapterContext) -> None:
    buggy = task.materials["buggy_procedure.sql"]
    if buggy == task.reference_code:
        raise AdapterRejected("buggy_code_passes", "the buggy code is the reference")
    if runs_here(task):
        if not ctx.fails(buggy):
            raise AdapterRejected("buggy_code_passes", "the buggy code reproduces the call suite")
        if ctx.fails(task.reference_code):
            raise AdapterRejected("reference_fails", ctx.fails(task.reference_code))


class LineEditError(ValueError):
    """Line edits that cannot be applied; the message names the task and the reason."""


def submitted(task_id: str, materials: dict[str, str], submission: str) -> str:
    """The procedure a submission stands for: itself, or the buggy code with its line edits applied."""
    if not submission.lstrip().startswith("{"):
        return submission
    try:
        edits = json.loads(submission)["edits"]
    except (ValueError, KeyError, TypeError) as exc:
        raise LineEditError(f'{task_id}: line edits are not JSON of the form {{"edits": [...]}} ({exc})') from exc
    lines = materials["buggy_procedure.sql"].split("\n")
    replaced: dict[int, str | None] = {}
    for n, edit in enumerate(edits if isinstance(edits, list) else [None], start=1):
        line = edit.get("line") if isinstance(edit, dict) else None
        if not isinstance(line, int) or not 1 <= line <= len(lines) or line in replaced:
            raise LineEditError(f"{task_id}: edit {n} names no line of buggy_procedure.sql once: {edit!r}")
        if edit.get("old") != lines[line - 1]:
            raise LineEditError(f"{task_id}: edit {n}: line {line} is {lines[line - 1]!r}, not {edit.get('old')!r}")
        if edit.get("new") is not None and not isinstance(edit["new"], str):
            raise LineEditError(f"{task_id}: edit {n}: new must be text or null, not {edit['new']!r}")
        replaced[line] = edit.get("new")
    kept = [replaced.get(i, text) for i, text in enumerate(lines, start=1)]
    return "\n".join(text for text in kept if text is not None)
