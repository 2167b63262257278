"""Scenario adapters, one module each: `build(ctx)` makes a seed's tasks, `check(task, ctx)` is its acceptance check.

Two adapters also shape grading (`grade_submission`): B3 takes line edits as well as a whole procedure
(`b3.submitted`), B2 times a candidate that passes against the reference and the baseline (`b2.timed_grade`).
A task whose database is an OracleCopy is graded on Oracle (plbench.procedures.oracle_grade), B2 on its calls.
"""

from plbench.diagnostics import INVALID_ARTIFACT
from plbench.procedures.grade import Grade, ProcedureTask, grade
from plbench.procedures.oracle_grade import grade_oracle
from plbench.procedures.oracle_workspace import OracleCopy
from plbench.procedures.scenarios import a1, a2, a3, a4, a5, b1, b2, b3, b4, c1, c2
from plbench.procedures.workspace import Workspace

ADAPTERS = {module.SCENARIO: module for module in (a1, b1, b2, b3, b4, c1, c2, a3, a4, a5, a2)}


def grade_submission(
    engine,
    task: ProcedureTask,
    scenario: str,
    materials: dict,
    suite: dict,
    submission: str,
    verdict_only: bool = False,
    workspace: Workspace | None = None,
) -> Grade:
    """Grade a submission to a task of `scenario` (materials and call suite as the release row holds them).
    `verdict_only`: only `passed` is wanted (plbench.procedures.grade.grade_in), so B2 does not time a pass;
    `workspace`: a PostgreSQL workspace to grade in (plbench.procedures.grade.grade)."""
    if scenario == b3.SCENARIO:
        try:
            submission = b3.submitted(task.task_id, materials, submission)
        except b3.LineEditError as exc:
            return Grade(False, ["fail"] * len(task.calls), str(exc), INVALID_ARTIFACT)
    if isinstance(task.db, OracleCopy):  # B2's timing reads PostgreSQL's statistics views: calls only here
        return grade_oracle(engine, task, submission)
    graded = grade(engine, task, submission, verdict_only, workspace)
    if "performance" in suite and graded.passed and not verdict_only:
        baseline = materials["current_procedure.sql"]
        return b2.timed_grade(engine, task, suite["performance"], baseline, submission, graded)
    return graded
