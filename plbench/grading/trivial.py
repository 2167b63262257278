"""Trivial candidates: a benchmark task must be able to fail, so none of these may pass a released task.

Per kind of task, candidates that do not solve anything (rules as data, `TRIVIAL`):
- function tasks (MBPP, MBPP+): `returns_null`, a function with the task's signature returning NULL;
  `returns_the_example`, one returning the prompt's example output (the first case's expected value)
  whatever its input;
- block tasks (Spider): `prints_nothing`, an empty block; `prints_the_first_line`, a block printing
  only the first expected line. Where the answer is one line that block *is* the answer, so it is not
  run there (`not_applicable`).

`run_trivial` grades each on every task through the one grading path (plbench.evaluate.grade) and
says what each passed. The release gate (`trivial_gate`) turns a block task some trivial candidate
passes (today: the Spider tasks whose gold result is empty, which the empty block passes) into a
rejection `trivial_candidate_passes`; function tasks a constant passes are listed in the manifest
instead, until input generation (the construction operators) gives them cases that tell apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from plbench.dialects import DIALECTS
from plbench.dialects.base import Unit
from plbench.engines.base import Engine
from plbench.grading.blocks import expected_outputs
from plbench.grading.functions import typed_task
from plbench.mbpp.artifacts import TaskEmitter, repr_sql
from plbench.records import Rejection

REASON = "trivial_candidate_passes"
STAGE = "trivial_candidates"


def _function(task: dict, body: Callable[[TaskEmitter], str]) -> str:
    em = TaskEmitter(typed_task(task), task["dialect"])
    return em.dialect.create_function(Unit(em.function_name, em.sql_params, em.sql_returns, body(em)), replace=True)


def _example(em: TaskEmitter) -> str:
    return f"  RETURN {em.dialect.literal(em.task.cases[0].expected, em.task.signature.returns, em.env)};"


def _block(task: dict, lines: list[str]) -> str:
    dialect = DIALECTS[task["dialect"]]
    return dialect.anonymous_block("", "\n".join([f"  {dialect.emit_line(repr_sql(x))}" for x in lines] or ["  NULL;"]))


def _first_line(task: dict) -> str | None:
    lines = expected_outputs(task)[0].lines
    return _block(task, [lines[0]]) if len(lines) > 1 else None


# kind of task -> trivial candidate -> its code for a task row (None: not applicable to that task)
TRIVIAL: dict[str, dict[str, Callable[[dict], str | None]]] = {
    "function": {
        "returns_null": lambda task: _function(task, lambda em: "  RETURN NULL;"),
        "returns_the_example": lambda task: _function(task, _example),
    },
    "block": {
        "prints_nothing": lambda task: _block(task, []),
        "prints_the_first_line": _first_line,
    },
}
REJECTED_KINDS = ("block",)  # function tasks a trivial candidate passes are listed, not rejected (see above)


def task_kind(task: dict) -> str:
    return "function" if task.get("signature") else "block"


def run_trivial(tasks: list[dict], engine: Engine, schemas: dict[tuple[str, str], str]) -> dict[tuple, dict]:
    """(task_id, dialect) -> {trivial candidate: passed (bool) or None when not applicable}, on the
    tasks of the engine's dialect; `schemas` maps (database, dialect) to its loaded schema."""
    from plbench.evaluate import grade

    out = {}
    for task in (t for t in tasks if t["dialect"] == engine.dialect):
        verdicts = {}
        for name, code_of in TRIVIAL[task_kind(task)].items():
            code = code_of(task)
            rows = (
                None
                if code is None
                else grade(engine, task, code, schemas.get((task.get("database"), task["dialect"])))
            )
            verdicts[name] = None if rows is None else all(r["verdict"] == "PASS" for r in rows)
        out[(task["task_id"], task["dialect"])] = verdicts
    return out


def summary(tasks: list[dict], results: dict[tuple, dict]) -> dict:
    """Per subset/dialect and trivial candidate: tasks run, not applicable, and the ids it passed."""
    by_key: dict[str, dict] = defaultdict(dict)
    subsets = {(t["task_id"], t["dialect"]): t["subset"] for t in tasks}
    for key, verdicts in sorted(results.items()):
        group = by_key[f"{subsets[key]}/{key[1]}"]
        for name, passed in verdicts.items():
            entry = group.setdefault(name, {"run": 0, "not_applicable": 0, "passed": []})
            entry["run" if passed is not None else "not_applicable"] += 1
            if passed:
                entry["passed"].append(key[0])
    return dict(sorted(by_key.items()))


def trivial_gate(tasks: list[dict], results: dict[tuple, dict]) -> tuple[set[tuple], list[Rejection], dict]:
    """(keys of the rows to drop, their rejections, the manifest section) from `run_trivial`'s results."""
    drop, rejections = set(), []
    rows = {(t["task_id"], t["dialect"]): t for t in tasks}
    for key, verdicts in sorted(results.items()):
        passed = sorted(name for name, ok in verdicts.items() if ok)
        task = rows[key]
        if passed and task_kind(task) in REJECTED_KINDS:
            drop.add(key)
            detail = f"passed by the trivial candidate(s) {', '.join(passed)}: the task cannot tell them from an answer"
            rejections.append(
                Rejection(task["subset"], task["source_id"], STAGE, REASON, detail, dialect=task["dialect"])
            )
    section = {"ran": True, "rejected_kinds": list(REJECTED_KINDS), "groups": summary(tasks, results)}
    return drop, rejections, section
