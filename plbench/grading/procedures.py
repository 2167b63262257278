"""Grading a procedure task (subset `procedures`): one case row per call of the task's call suite.

The candidate procedure is installed in a fresh copy of the task's database and the calls run in order
(plbench.procedures.grade: a rolled-back session, the candidate role, the statement timeout; on Oracle a
session of its own, the copy made from the normalized files, plbench.procedures.oracle_grade). A call
passes when its raised error, output lines and every user table's state equal the reference's; the
task's EX is 1 only when every call passes (Suite Pass@1 over these rows). The first failing call's
detail names the call and what differs, e.g. `state differs after call 2: table singer, 1 row changed`;
a later failing call repeats it after its own note.
"""

from __future__ import annotations

import json

from plbench.diagnostics import REFERENCE_ERROR
from plbench.engines.base import Engine
from plbench.grading.results import case_row, every_case
from plbench.procedures.rows import database_schema, grade_copied, grade_task


def grade_procedure(
    engine: Engine, task: dict, code: str, schema: str | None = None, verdict_only: bool = False
) -> list[dict]:
    """The case rows (case, verdict, category, detail) of a candidate procedure, one per call; with
    `verdict_only` they say only whether every call passed (plbench.procedures.grade.grade_in)."""
    schema = schema or database_schema(task)
    calls = json.loads(task["test_cases"])
    if engine.copies_databases:
        try:
            graded = grade_copied(engine, task, code)
        except ValueError as exc:
            return _not_run(len(calls), str(exc))
    elif not engine.loaded(schema):
        return _not_run(len(calls), f"database {task['database']} is not loaded on this server")
    else:
        graded = grade_task(engine, task, code, schema, verdict_only)
    if graded.passed:
        return every_case(len(calls), "PASS", None, "")
    first = graded.call_verdicts.index("fail") + 1 if "fail" in graded.call_verdicts else 1
    rows = []
    for n, verdict in enumerate(graded.call_verdicts, start=1):
        if verdict == "pass":
            rows.append(case_row(n, "PASS", None, ""))
        else:
            detail = graded.detail if n == first else f"fails too; the first failure, call {first}: {graded.detail}"
            rows.append(case_row(n, "TIMEOUT" if n in graded.timed_out else "FAIL", graded.category, detail))
    return rows


def _not_run(calls: int, why: str) -> list[dict]:
    return every_case(calls, "NOT_RUN", REFERENCE_ERROR, why)
