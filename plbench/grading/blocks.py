"""Grading a block task (Spider-PLSQL, Spider 2.0): the lines a candidate block prints are its answer.

The block runs in an isolated session that reads the task's loaded database (read-only, as the
candidate role). The lines it printed are compared in Python with the expected lines, in order when
the task's gold orders its rows, else as a multiset (`plbench.spider.tasks.outputs_match`). A task
is one case. A block can print only its own lines; the expected lines are in the release, never in
the database or the session.

Expected lines: Spider-PLSQL rows carry them (`expected_lines`, the gold's result on the source
database printed by the output rule); a Spider 2.0 row carries the official result CSVs, each an
accepted answer, whose fields are printed by the same rule (numbers parsed, empty fields as NULL).
"""

from __future__ import annotations

import csv
import decimal
import functools
import io
import json
import re

from plbench.diagnostics import CATEGORY_BY_CODE, REFERENCE_ERROR, WRONG_LOGIC
from plbench.engines.base import Engine, ExecResult
from plbench.grading.results import case_row
from plbench.spider.output_format import format_row
from plbench.spider.tasks import ReferenceOutput, outputs_match

_INTEGER = re.compile(r"^-?\d+$")


def _csv_value(text: str):
    if text == "":
        return None
    if _INTEGER.match(text):
        return int(text)
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return text
    return number if number.is_finite() else text


# The release gate reads one row's result files for its first-line candidate and again to grade each
# candidate; formatting them was a cold gate's largest Python cost. The last few are kept.
@functools.lru_cache(maxsize=16)
def csv_lines(text: str) -> tuple[str, ...]:
    """The lines of an official result CSV (header dropped) as the output rule prints them."""
    rows = list(csv.reader(io.StringIO(text, newline="")))[1:]  # as csv asks: it reads \r, \n and \r\n itself
    return tuple(format_row(tuple(_csv_value(v) for v in row)) for row in rows)


def expected_outputs(task: dict) -> list[ReferenceOutput]:
    """Every accepted output of a block task (Spider 2.0 may accept several result files)."""
    cases = json.loads(task["test_cases"])
    if "expected_lines" in cases:
        return [ReferenceOutput(tuple(cases["expected_lines"]), cases["ordered"])]
    results = cases.get("reference_results") or {}
    return [ReferenceOutput(csv_lines(results[name]), cases["ordered"]) for name in sorted(results)]


def run_block(engine: Engine, code: str, schema: str | None) -> ExecResult:
    """What a candidate block printed, in a session reading the task's database schema."""
    with engine.session(reads=(schema,) if schema else ()) as session:
        return session.execute(code)


def grade_block(engine: Engine, task: dict, code: str, schema: str | None) -> list[dict]:
    """The one case row (case, verdict, category, detail) of a candidate block. A task naming no
    database runs in a session that reads none."""
    if task.get("database") and schema is None:
        return [case_row(1, "NOT_RUN", REFERENCE_ERROR, f"database {task['database']} is not loaded on this server")]
    result = run_block(engine, code, schema)
    if result.timed_out:
        return [case_row(1, "TIMEOUT", WRONG_LOGIC, "statement timeout")]
    if result.error is not None:
        # Syntax and grounding errors by their code; any other error was raised computing the answer.
        category = CATEGORY_BY_CODE.get(result.error.code, WRONG_LOGIC)
        return [case_row(1, "ERROR", category, f"{result.error.code}: {result.error.message}")]
    accepted = expected_outputs(task)
    if any(outputs_match(ref, result.lines) for ref in accepted):
        return [case_row(1, "PASS", None, "")]
    want = len(accepted[0].lines) if accepted else 0
    return [case_row(1, "FAIL", WRONG_LOGIC, f"printed {len(result.lines)} lines, {want} expected; not the answer")]
