"""Grade a candidate procedure against a procedural task on Oracle: a verdict per call, EX for the task.

The release's call suite records PostgreSQL's state hashes, and Oracle types values otherwise (NUMBER,
DATE with a time, '' as NULL), so the expected observations are the Oracle reference's own run on a
fresh copy of the database (plbench.procedures.oracle_workspace); the candidate then runs on another
fresh copy. Verdicts, categories and details are PostgreSQL's (plbench.procedures.grade): the first
diverging call and table, with the row difference taken from both runs' rows of that table, e.g.
`state differs after call 2: table SINGER, 1 row changed`. A reference that does not run on Oracle is
a `reference_error`, the candidate not graded.
"""

from __future__ import annotations

import weakref

from plbench.diagnostics import REFERENCE_ERROR, WRONG_LOGIC
from plbench.procedures.grade import (
    Grade,
    ProcedureTask,
    call_verdicts,
    first_mismatch,
    not_installed,
    row_difference,
    timed_out_calls,
)
from plbench.procedures.oracle_workspace import OracleTrace, OracleWorkspace

# engine -> (copy, setup, reference, calls) -> the reference's run: candidates of one task share it
_REFERENCE_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_KEPT_RUNS = 32


def reference_run(workspace: OracleWorkspace, task: ProcedureTask) -> OracleTrace | str:
    """The Oracle reference's run of the task's calls, or why it did not run them all; run once per engine
    for the same copy, setup, reference and calls (the build checked the reference deterministic)."""
    runs = _REFERENCE_RUNS.setdefault(workspace.engine, {})
    key = (workspace.db.statements, task.setup, task.reference, task.calls)
    if key in runs:
        return runs[key]
    trace = workspace.run(list(task.setup), task.reference, list(task.calls))
    if trace.install_error:  # not kept: it may be the server's passing trouble
        return f"the reference does not install on Oracle: {trace.install_error}"
    if len(runs) >= _KEPT_RUNS:  # a run holds every table's rows after every call: keep the latest only
        runs.pop(next(iter(runs)))
    runs[key] = trace
    return trace


def grade_oracle(engine, task: ProcedureTask, candidate: str) -> Grade:
    """Run the reference, then `candidate`, each on a fresh copy of `task.db` (an OracleCopy), and compare."""
    workspace = OracleWorkspace(engine, task.db)
    reference = reference_run(workspace, task)
    if isinstance(reference, str):
        return Grade(False, ["fail"] * len(task.calls), reference, REFERENCE_ERROR)
    return compared(reference, workspace.run(list(task.setup), candidate, list(task.calls)))


def compared(reference: OracleTrace, trace: OracleTrace) -> Grade:
    """The grade of a candidate's run against the reference's run of the same calls."""
    if trace.install_error:
        return not_installed(trace, len(reference.calls))
    expected = tuple(c.observed() for c in reference.calls)
    verdicts = call_verdicts(expected, trace)
    for index, (want, got) in enumerate(zip(expected, trace.calls)):
        what, table = first_mismatch(index + 1, want, got)
        if what:
            if table:
                theirs = reference.rows[index].get(table, [])
                what += ", " + row_difference(theirs, trace.rows[index].get(table, []))
            return Grade(False, verdicts, what, WRONG_LOGIC, timed_out=timed_out_calls(trace))
    return Grade(True, verdicts)
