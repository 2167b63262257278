"""Trivial candidates: a benchmark task must be able to fail, so none of these may pass a released task.

Per kind of task, candidates that do not solve anything (rules as data, `TRIVIAL`; a subset names
its own through `plbench.subsets.base.Subset.trivial_candidates`, by default these):
- function tasks (MBPP, MBPP+): `returns_null`, a function with the task's signature returning NULL;
  `returns_the_example`, one returning the prompt's example output (the first case's expected value)
  whatever its input;
- block tasks (Spider): `prints_nothing`, an empty block; `prints_the_first_line`, a block printing
  only the first expected line. Where the answer is one line that block *is* the answer, so it does
  not apply there;
- procedure tasks: the subset renders them from each seed's model at build time (`noop`,
  `first_call_only`, `state_change_removed`: plbench.procedures.strength) and hands them over in its
  release part (SubsetRelease.trivial_candidates).

`run_trivial` grades each through the one grading path (plbench.evaluate.passes_each: `grade`, stopping
at a procedure's first failing call, since a verdict is all the gate records; a procedure task's
candidates one after another in one copy of its database) and says what each passed.
The release gate (`gate_parts`, run by the `release_tables` asset) turns a block task some trivial
candidate passes (today: the Spider tasks whose gold result is empty, which the empty block
passes), and a procedure task one passes, into a rejection `trivial_candidate_passes`; function
tasks a constant passes are listed in the manifest's `trivial_candidates` section instead, until
input generation (the construction operators) gives them cases that tell a constant apart.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from plbench.config import NotConfigured
from plbench.dialects import DIALECTS
from plbench.dialects.base import Unit
from plbench.engines.base import Engine
from plbench.evaluate import loaded_schemas, passes_each, task_kind
from plbench.grading.blocks import expected_outputs
from plbench.grading.functions import typed_task
from plbench.grading.verdict_cache import VerdictCache
from plbench.mbpp.artifacts import TaskEmitter, repr_sql
from plbench.records import Rejection
from plbench.taskrow import task_records

if TYPE_CHECKING:  # the registry is passed in, not imported (gate_parts)
    from plbench.subsets.base import Subset

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
REJECTED_KINDS = ("block", "procedure")  # function tasks a trivial candidate passes are listed, not rejected


def trivial_candidates(task: dict) -> list[tuple[str, str]]:
    """(name, code) of the trivial candidates of a task row's kind that apply to it."""
    made = [(name, code_of(task)) for name, code_of in TRIVIAL.get(task_kind(task), {}).items()]
    return [(name, code) for name, code in made if code is not None]


# What a procedure task's verdicts depend on besides the code: the scenarios of one seed share them (only
# their prompt and materials differ), so each trivial candidate is graded once per seed and setup.
PROCEDURE_GRADING_INPUTS = ("dialect", "database", "setup_sql", "test_cases", "call_suite")


def grading_inputs(task: dict) -> tuple:
    """The task columns a candidate's verdict depends on: tasks equal in them get equal verdicts."""
    if task_kind(task) == "procedure":
        return tuple(task[c] for c in PROCEDURE_GRADING_INPUTS)
    return (task["task_id"], task["dialect"])


# Procedure tasks of one database graded in one copy of it (plbench.evaluate.passes_each), so many at a time:
# their distinct grading inputs. A backend's rollbacks slow down with every procedure it compiled, so not more.
GRADING_INPUTS_PER_COPY = 16


def batches(tasks: list[dict]) -> list[list[dict]]:
    """The tasks in the groups graded together: procedure tasks of one database, GRADING_INPUTS_PER_COPY
    distinct grading inputs at a time (with every task having them); any other task alone."""
    alone, by_database = [], defaultdict(lambda: defaultdict(list))
    for task in tasks:
        if task_kind(task) == "procedure":
            by_database[task["database"]][grading_inputs(task)].append(task)
        else:
            alone.append([task])
    n = GRADING_INPUTS_PER_COPY
    groups = [list(same.values()) for same in by_database.values()]
    return alone + [[t for ts in inputs[i : i + n] for t in ts] for inputs in groups for i in range(0, len(inputs), n)]


def run_trivial(
    tasks: list[dict],
    engine: Engine,
    schemas: dict[tuple[str, str], str],
    workers: int = 1,
    candidates_of: Callable[[dict], list[tuple[str, str]]] = trivial_candidates,
    cache: VerdictCache | None = None,
) -> dict[tuple, dict[str, bool]]:
    """(task_id, dialect) -> {trivial candidate: whether it passed every case}, for the tasks of the
    engine's dialect, `workers` groups (`batches`) at a time; `schemas` maps (database, dialect) to its
    loaded schema. A candidate is graded once per distinct `grading_inputs` of the tasks it is given, and
    not at all when `cache` holds its verdict from an earlier gate (which it then holds for later ones)."""
    known: dict[tuple, bool] = {}  # (what the verdict depends on, code) -> passed, filled as it goes

    def verdicts(batch: list[dict]) -> list[dict[str, bool]]:
        made = [(grading_inputs(task), candidates_of(task)) for task in batch]
        todo: dict[tuple, tuple[dict, list[str]]] = {}  # grading inputs -> (a task with them, codes to grade)
        for task, (inputs, candidates) in zip(batch, made):
            codes = todo.setdefault(inputs, (task, []))[1]
            codes += [c for c in dict.fromkeys(c for _, c in candidates) if (inputs, c) not in known and c not in codes]
        keyed: dict[tuple, str] = {}  # (grading inputs, code) -> its key in the cache
        if cache:
            for inputs, (task, codes) in todo.items():
                keyed |= {(inputs, code): key for code, key in zip(codes, cache.keys(task, codes))}
            kept = cache.get(list(keyed.values()))
            known.update({pair: kept[key] for pair, key in keyed.items() if key in kept})
        graded = [(task, [c for c in codes if (inputs, c) not in known]) for inputs, (task, codes) in todo.items()]
        graded = [(task, codes) for task, codes in graded if codes]
        schema = schemas.get((batch[0].get("database"), batch[0]["dialect"]))
        for (task, codes), passed in zip(graded, passes_each(engine, graded, schema)):
            inputs = grading_inputs(task)
            known.update({(inputs, code): bool(ok) for code, ok in zip(codes, passed)})
            if cache:
                cache.put({keyed[(inputs, code)]: ok for code, ok in zip(codes, passed)})
        return [{name: known[(inputs, code)] for name, code in candidates} for inputs, candidates in made]

    mine = [t for t in tasks if t["dialect"] == engine.dialect]
    groups = batches(mine)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = {id(t): v for batch, out in zip(groups, pool.map(verdicts, groups)) for t, v in zip(batch, out)}
    return {(t["task_id"], t["dialect"]): found[id(t)] for t in mine}


def summary(tasks: list[dict], results: dict[tuple, dict]) -> dict:
    """Per subset/dialect: the tasks run, and per trivial candidate the tasks it ran on (it does not
    apply to the others) and the ids of those it passed."""
    by_key: dict[str, dict] = defaultdict(lambda: {"tasks": 0, "candidates": {}})
    subsets = {(t["task_id"], t["dialect"]): t["subset"] for t in tasks}
    for key, verdicts in sorted(results.items()):
        group = by_key[f"{subsets[key]}/{key[1]}"]
        group["tasks"] += 1
        for name, passed in verdicts.items():
            entry = group["candidates"].setdefault(name, {"ran": 0, "passed": []})
            entry["ran"] += 1
            if passed:
                entry["passed"].append(key[0])
    return dict(sorted(by_key.items()))


def trivial_gate(tasks: list[dict], results: dict[tuple, dict]) -> tuple[set[tuple], list[Rejection], dict]:
    """(keys of the rows to drop, their rejections, the manifest section) from `run_trivial`'s results.

    A block task's expected lines are the same in every dialect, so a trivial pass where it ran
    rejects the task's rows in the dialects it could not run in too (Oracle, without a server).
    """
    failed: dict[str, tuple[str, list[str]]] = {}  # task id -> (dialect it ran in, candidates that passed)
    for (task_id, dialect), verdicts in sorted(results.items()):
        passed = sorted(name for name, ok in verdicts.items() if ok)
        if passed and task_id not in failed:
            failed[task_id] = (dialect, passed)
    drop, rejections = set(), []
    for task in tasks:
        if task["task_id"] not in failed or task_kind(task) not in REJECTED_KINDS:
            continue
        dialect, passed = failed[task["task_id"]]
        drop.add((task["task_id"], task["dialect"]))
        detail = f"passed on {dialect} by {', '.join(passed)}: the task cannot tell a trivial candidate from an answer"
        rejections.append(Rejection(task["subset"], task["source_id"], STAGE, REASON, detail, dialect=task["dialect"]))
    section = {"ran": True, "rejected_kinds": list(REJECTED_KINDS), "groups": summary(tasks, results)}
    return drop, rejections, section


def gate_parts(
    parts: list,
    subsets: Mapping[str, Subset],
    engine: Engine | NotConfigured,
    workers: int = 1,
    cache: VerdictCache | None = None,
) -> list:
    """The release gate on every subset's part (plbench.subsets.SubsetRelease): each subset's trivial
    candidates run on its PostgreSQL rows; the rows `trivial_gate` drops become rejections, and the
    part's manifest gets its `trivial_candidates` section. Without a PostgreSQL engine nothing runs and
    the sections say why. `subsets` (the registered ones by name) names the trivial candidates of the rows
    whose part did not make them: passed, not imported, since importing the registry here would put every
    subset's code in the code version of each, through plbench.subsets.base. With `cache`, verdicts an
    earlier gate settled are read from it, and this gate's settled verdicts are saved in it."""
    present = [p for p in parts if p is not None]
    if isinstance(engine, NotConfigured):
        return [_with_gate(p, set(), [], {"ran": False, "reason": engine.reason}) if p else p for p in parts]
    databases = [row for p in present for row in p.tables.get("databases.parquet", ([], None))[0]]
    schemas = loaded_schemas(databases)
    if cache:
        cache.identify_databases(databases)
    by_key = {r.key: r for p in present for r in p.rows}
    made = {key: found for p in present for key, found in p.trivial_candidates.items()}

    def candidates_of(task: dict) -> list[tuple[str, str]]:  # as the task's subset made or names them
        key = (task["task_id"], task["dialect"])
        return made[key] if key in made else subsets[task["subset"]].trivial_candidates(by_key[key])

    # Every part's rows at once: procedure tasks of one database share copies whatever their subset, and a
    # verdict is graded once for the parts sharing its grading inputs (multiturn's turns are procedures_ile's
    # rounds, interactive's tasks procedures' seeds). Only the rows graded are held as records meanwhile.
    mine = [t for p in present for t in task_records([r for r in p.rows if r.dialect == engine.dialect])]
    results = run_trivial(mine, engine, schemas, workers, candidates_of, cache)
    del mine
    if cache:
        cache.save()
    gated = {}
    for part in present:
        own = {r.key: results[r.key] for r in part.rows if r.key in results}
        gated[part.subset] = _with_gate(part, *trivial_gate(task_records(part.rows), own))
    return [gated[p.subset] if p is not None else None for p in parts]


def _with_gate(part, drop: set[tuple], rejections: list[Rejection], section: dict):
    return dataclasses.replace(
        part,
        rows=[r for r in part.rows if r.key not in drop],
        rejections=[*part.rejections, *rejections],
        manifest={**part.manifest, "trivial_candidates": {part.subset: section}},
    )
