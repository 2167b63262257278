"""Replay validation: the emitted harness must pass a function that knows the answers,
and fail every mutant of it.

Per task and dialect, in one isolated engine session: run the setup DDL, create
the replay function (case arguments → expected outputs), run the test block; then
for each mutant replace the function and run the block again, as a variant that
returns at the first case not passing (the cases after it cannot save the mutant).
The task passes when every case of the replay run prints PASS and every mutant run
has at least one case that does not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from plbench.dialects.base import UnrepresentableValue
from plbench.engines.base import Engine, ExecResult
from plbench.mbpp.artifacts import TaskEmitter, TypedTask, parse_verdicts
from plbench.validation.mutants import mutants


@dataclass(frozen=True)
class ReplayResult:
    task_id: str
    dialect: str
    status: str  # "passed" | "failed" | "harness_too_weak"
    detail: str = ""
    mutants_total: int = 0
    mutants_killed: int = 0
    survivors: tuple[str, ...] = field(default=())
    seconds: float = 0.0


def _first_error(results: list[ExecResult]) -> str:
    bad = next((r for r in results if not r.ok), None)
    if bad is None:
        return ""
    if bad.timed_out:
        return "statement timeout"
    return f"{bad.error.code}: {bad.error.message}"[:500] if bad.error else "failed"


def validate_task(engine: Engine, task: TypedTask) -> ReplayResult:
    start = time.perf_counter()
    emitter = TaskEmitter(task, engine.dialect)
    total = len(task.cases)
    try:
        replay_fn = emitter.replay_function([c.expected for c in task.cases])
        mutant_fns = [(m.name, emitter.replay_function(m.outputs)) for m in mutants(task)]
        harness = emitter.test_block_statements()
        mutant_block = emitter.test_block_statements(first_failure_ends=True)[-1]
    except UnrepresentableValue as exc:
        return ReplayResult(task.task_id, engine.dialect, "failed", f"{exc.reason_code}: {exc.detail}")
    *prelude, block = harness
    with engine.session() as session:
        setup = [session.execute(s) for s in emitter.setup_statements() + prelude + [replay_fn]]
        run = session.execute(block)
        verdict = parse_verdicts(run.lines, total)
        if _first_error(setup + [run]) or not verdict.all_passed:
            detail = _first_error(setup + [run]) or _describe(verdict)
            return ReplayResult(task.task_id, engine.dialect, "failed", detail, seconds=time.perf_counter() - start)
        survivors = []
        for name, fn in mutant_fns:
            created = session.execute(fn)
            result = session.execute(mutant_block)  # killed at its first case not passing
            if created.ok and result.ok and parse_verdicts(result.lines, total).all_passed:
                survivors.append(name)
    status = "harness_too_weak" if survivors else "passed"
    detail = f"mutants not detected: {', '.join(survivors)}" if survivors else ""
    return ReplayResult(
        task.task_id,
        engine.dialect,
        status,
        detail,
        len(mutant_fns),
        len(mutant_fns) - len(survivors),
        tuple(survivors),
        time.perf_counter() - start,
    )


def _describe(verdict) -> str:
    failing = {n: v for n, v in sorted(verdict.verdicts.items()) if v != "PASS"}
    if not verdict.complete:
        return f"the test block did not report all {verdict.total} cases"
    return "replay cases not passing: " + ", ".join(f"{n} {v}" for n, v in list(failing.items())[:10])
