"""Grade a candidate procedure against a procedural task: a verdict per call, EX for the task.

The candidate runs in its own fresh workspace (a copy of the database in a rolled-back session, as the
unprivileged candidate role, under the statement timeout and the engine's watchdog). After every call
the grader reads every user table's state itself and compares it, the output lines and the raised error
with what the reference did. EX = 1 only when every call matches. The detail names the first diverging
call and what differs, e.g. `state differs after call 2: table singer, 1 row changed`, from the two
sides' rows of that table (the reference rerun in another fresh workspace).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from plbench.diagnostics import WRONG_LOGIC, category_of
from plbench.procedures.workspace import TAMPERED, CallResult, DatabaseCopy, Trace, Workspace


@dataclass(frozen=True)
class ProcedureTask:
    """What grading needs of a task (the release row's columns, decoded)."""

    task_id: str
    db: DatabaseCopy  # or an OracleCopy: graded on Oracle (plbench.procedures.scenarios.grade_submission)
    setup: tuple[str, ...]
    reference: str
    calls: tuple[str, ...]
    expected: tuple[tuple, ...]  # CallResult.observed() of the reference, per call (Oracle: its own run)
    extra_tables: tuple[str, ...] = ()


@dataclass
class Grade:
    passed: bool
    call_verdicts: list[str] = field(default_factory=list)  # "pass" / "fail" per call
    detail: str = ""
    category: str | None = None
    metrics: dict = field(default_factory=dict)  # a scenario's measurements (B2: speedups and work counters)
    timed_out: tuple[int, ...] = ()  # the calls (from 1) that ran out of time: another run may decide them otherwise

    @property
    def verdict(self) -> bool | None:
        """True when it passed, False when it failed, None when it failed but a call ran out of time."""
        return True if self.passed else (None if self.timed_out else False)


def timed_out_calls(trace) -> tuple[int, ...]:
    """The calls (from 1) of a run that ran out of time."""
    return tuple(n for n, call in enumerate(trace.calls, start=1) if call.error == "timeout")


def _rows(workspace: Workspace, table: str) -> list[tuple[str, str]]:
    keys = workspace.db.keys.get(table, ())
    key = f"ROW({', '.join('r.' + k for k in keys)})::text" if keys else "r::text"
    result = workspace.read(f"SELECT {key}, r::text FROM {workspace.schema}.{table} AS r")
    return [tuple(r) for r in result.rows] if result.ok else []


def row_difference(expected: list[tuple[str, str]], got: list[tuple[str, str]]) -> str:
    """'1 row changed', '2 rows added, 1 row removed', ... between two (key, row) lists."""
    want, have = Counter(expected), Counter(got)
    missing, extra = want - have, have - want
    missing_keys = Counter(k for k, _ in missing.elements())
    extra_keys = Counter(k for k, _ in extra.elements())
    changed = sum((missing_keys & extra_keys).values())
    added = sum(extra_keys.values()) - changed
    removed = sum(missing_keys.values()) - changed
    parts = [
        f"{n} row{'s' if n != 1 else ''} {what}"
        for n, what in ((changed, "changed"), (added, "added"), (removed, "removed"))
        if n
    ]
    return ", ".join(parts) or "same rows, different content hash"


def first_mismatch(index: int, expected: tuple, got: CallResult) -> tuple[str, str | None]:
    """(what differs, the table whose state differs or None) for call `index` (1-based)."""
    error, lines, state = expected
    if got.error != error:
        return f"call {index}: expected {'error ' + error if error else 'no error'}, got " + (
            f"error {got.error} ({got.message[:120]})" if got.error else "no error"
        ), None
    if got.lines != lines:
        return f"output differs after call {index}", None
    want = dict(state)
    for table in sorted(set(want) | set(got.state)):
        if got.state.get(table) != want.get(table):
            if got.state.get(table, (0, ""))[1] == TAMPERED or table == TAMPERED:
                return f"state unreadable after call {index}: table {table} was replaced or hidden", None
            return f"state differs after call {index}: table {table}", table
    return "", None


def grade(
    engine, task: ProcedureTask, candidate: str, verdict_only: bool = False, workspace: Workspace | None = None
) -> Grade:
    """Install `candidate` in a fresh workspace and run the task's calls (see the module docstring);
    `verdict_only`: see `grade_in`. With a `workspace`, in that one, shared with the candidates graded
    before (the build's own: plbench.procedures.rows.grade_task_each)."""
    if workspace is not None:
        return grade_in(workspace, task, candidate, verdict_only=verdict_only)
    reads = (task.db.schema_name,)
    with engine.session(reads=reads) as session, contextlib.ExitStack() as later:

        def reference_workspace() -> Workspace:  # only a failure's detail needs one
            return Workspace(later.enter_context(engine.session(reads=reads)), task.db)

        return grade_in(Workspace(session, task.db), task, candidate, reference_workspace, verdict_only=verdict_only)


def grade_in(
    workspace: Workspace,
    task: ProcedureTask,
    candidate: str,
    reference_workspace=None,
    built: bool = False,
    verdict_only: bool = False,
) -> Grade:
    """Grade in an existing workspace (the build grades its own code so); the reference's rows for the
    detail come from `reference_workspace()` when given, else from the same workspace after a reset.
    `built`: the candidate is one the build made, writing only `task.extra_tables` (see suites.run_seed),
    so both it and the reference run as `Workspace.run_built` runs them (the same trace, fewer reads).
    `verdict_only`: only `passed` is wanted (the trivial-candidate gate), so the calls stop at the first
    that fails (it and the calls not made are "fail"), and the detail names what differs without the rows
    (no reference rerun)."""
    first: dict = {}

    def inspect(index: int, result: CallResult) -> bool:
        what, table = first_mismatch(index + 1, task.expected[index], result)
        if what and not first:
            rows = _rows(workspace, table) if table and not verdict_only else []
            first.update(index=index, what=what, table=table, rows=rows)
        return not (verdict_only and first)

    trace = _run(workspace, built)(list(task.setup), candidate, list(task.calls), task.extra_tables, inspect)
    if trace.install_error:
        return not_installed(trace, len(task.calls))
    verdicts = call_verdicts(task.expected, trace)
    if not first:
        return Grade(True, verdicts)
    detail = first["what"]
    if first["table"] and not verdict_only:
        other = reference_workspace() if reference_workspace else workspace
        reference = _reference_rows(other, task, first["index"], first["table"], built)
        detail += ", " + row_difference(reference, first["rows"])
    return Grade(False, verdicts, detail, WRONG_LOGIC, timed_out=timed_out_calls(trace))


def not_installed(trace: Trace, calls: int) -> Grade:
    """Every call fails; the category comes from the engine's code of why the candidate did not install."""
    code = trace.install_error.split(":", 1)[0]
    timed_out = tuple(range(1, calls + 1)) if code == "timeout" else ()
    detail = f"does not install: {trace.install_error}"
    return Grade(False, ["fail"] * calls, detail, category_of(code), timed_out=timed_out)


def call_verdicts(expected: tuple[tuple, ...], trace: Trace) -> list[str]:
    """Per call, "pass" when its observation equals the expected one, else "fail" (also for calls not made)."""
    return [
        "pass" if i < len(trace.calls) and trace.calls[i].observed() == want else "fail"
        for i, want in enumerate(expected)
    ]


def _reference_rows(
    workspace: Workspace, task: ProcedureTask, index: int, table: str, built: bool
) -> list[tuple[str, str]]:
    rows: list = []

    def inspect(i: int, result: CallResult) -> bool:
        if i == index:
            rows.extend(_rows(workspace, table))
        return i < index

    _run(workspace, built)(list(task.setup), task.reference, list(task.calls), task.extra_tables, inspect)
    return rows


def _run(workspace: Workspace, built: bool) -> Callable:
    """How grade_in runs code: as the build runs its own (`built`), or as any candidate."""
    return workspace.run_built if built else workspace.run
