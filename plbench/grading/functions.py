"""Grading a function task (MBPP, MBPP+): call the candidate per case from the client, compare in Python.

Per candidate, in one isolated session: run the task's setup (its named types), install the
candidate, then `call_all` the declared function with each case's arguments, rendered as literals of
the declared types by the dialect. Each result is decoded by the declared return type and compared
with the expected value by `plbench.compare.same` under the task's tolerance. The expected values
stay in this process.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from plbench import values
from plbench.compare import Tolerance, same
from plbench.diagnostics import REFERENCE_ERROR, WRONG_LOGIC, case_error_category, category_of
from plbench.engines.base import CallOutcome, Engine
from plbench.grading.results import case_row, every_case
from plbench.grading.types import parse_type
from plbench.mbpp.artifacts import TaskEmitter, TypedTask, ints_fit_bigint
from plbench.mbpp.extract import Comparison, TestCase
from plbench.mbpp.pytypes import Signature
from plbench.typed_json import decode
from plbench.types import PyType

# The row fields `typed_task` reads: the key of its cache.
TYPED_TASK_FIELDS = ("subset", "task_id", "entry_point", "signature", "test_cases", "comparison")


def typed_task(task: dict) -> TypedTask:
    """The typed task behind a release row (signature, cases and comparison from their JSON)."""
    return _typed_task(*(task[f] for f in TYPED_TASK_FIELDS))


# The release gate asks for one row's typed task three times in a row (its two trivial candidates' code,
# then their grading), and decoding its cases is most of a cold gate's Python: the last few are kept.
@functools.lru_cache(maxsize=16)
def _typed_task(subset: str, task_id: str, entry_point: str, signature: str, test_cases: str, comparison: str):
    signature = json.loads(signature)
    params = tuple((p["name"], parse_type(p["python_type"])) for p in signature["params"])
    cases = tuple(
        TestCase(tuple(values.decode(c["args"])), values.decode(c["expected"]), c.get("origin", ""))
        for c in json.loads(test_cases)
    )
    rules = json.loads(comparison)
    return TypedTask(
        subset,
        task_id.split("/", 1)[-1],
        "",
        entry_point,
        Signature(params, parse_type(signature["returns"]["python_type"])),
        cases,
        Comparison(rules["unordered"], rules["atol"], rules["rtol"]),
        ints_fit_bigint(cases),
    )


def split_script(text: str | None, dialect) -> list[str]:
    """Statements of a release script: Oracle's are separated by `/` lines; PostgreSQL runs it whole."""
    if not text or not text.strip():
        return []
    return dialect.script_statements(text)


@dataclass(frozen=True)
class _Calls:
    """What grading any candidate of one function task in one dialect needs of the task."""

    dialect: Any
    setup: list[str]
    function_name: str
    arguments: list[list[str]]  # a case's arguments as literals, per case
    expected: list[Any]  # as the dialect grades them
    returns: PyType
    tolerance: Tolerance


# The release row's fields a task's `_Calls` come from.
_CALL_FIELDS = ("subset", "task_id", "entry_point", "signature", "test_cases", "comparison", "setup_sql")


@functools.lru_cache(maxsize=32)
def _calls(dialect: str, *fields: str) -> _Calls:
    """A task's `_Calls`, made once for the candidates of a task graded one after another (samples of one
    model, the trivial candidates of the gate): decoding its cases and writing their literals cost more
    client time than the candidate's round trips. Keyed by the row's `_CALL_FIELDS`, strings the release
    row holds."""
    task = dict(zip(_CALL_FIELDS, fields))
    typed = typed_task(task)
    emitter = TaskEmitter(typed, dialect)
    returns = typed.signature.returns
    return _Calls(
        emitter.dialect,
        split_script(task["setup_sql"], emitter.dialect),
        emitter.function_name,
        [emitter.arguments(c) for c in typed.cases],
        [emitter.dialect.graded_value(c.expected, returns) for c in typed.cases],
        returns,
        Tolerance(typed.comparison.atol, typed.comparison.rtol),
    )


def grade_function(engine: Engine, task: dict, code: str) -> list[dict]:
    """(case, verdict, category, detail) of every case of one candidate for one function task."""
    calls = _calls(engine.dialect, *(task[f] for f in _CALL_FIELDS))
    cases = len(calls.arguments)
    with engine.session() as session:
        for statement in calls.setup:
            setup = session.execute(statement, setup=True)
            if not setup.ok:
                return every_case(cases, "NOT_RUN", REFERENCE_ERROR, f"setup failed: {setup.error}")
        created = session.execute(code)
        if created.timed_out:
            return every_case(cases, "TIMEOUT", WRONG_LOGIC, "timed out while installing")
        if not created.ok:
            error = created.error
            return every_case(cases, "NOT_RUN", category_of(error.code), f"{error.code}: {error.message}")
        outcomes = session.call_all(calls.function_name, calls.arguments, last=True)
    return [
        _verdict(n, outcome, expected, calls)
        for n, (expected, outcome) in enumerate(zip(calls.expected, outcomes), start=1)
    ]


def _verdict(n: int, outcome: CallOutcome, expected: Any, calls: _Calls) -> dict:
    """A case's row; `expected` as the dialect grades it."""
    if outcome.timed_out:
        return case_row(n, "TIMEOUT", WRONG_LOGIC, "statement timeout")
    if outcome.error is not None:
        message = f"{outcome.error.code}: {outcome.error.message}"
        return case_row(n, "ERROR", case_error_category(message), message)
    dialect, returns = calls.dialect, calls.returns
    try:
        actual = dialect.graded_value(decode(dialect.fetched_value(outcome.value, returns), returns), returns)
    except (KeyError, TypeError, ValueError, StopIteration, AttributeError):
        return case_row(n, "FAIL", WRONG_LOGIC, f"returned {outcome.value!r:.200}, not a {returns.describe()}")
    if same(expected, actual, calls.tolerance):
        return case_row(n, "PASS", None, "")
    return case_row(n, "FAIL", WRONG_LOGIC, f"returned {values.dumps(actual)[:200]}")
