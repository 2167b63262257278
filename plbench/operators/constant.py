"""Tasks a constant candidate passes (every case expects one output), augmented with generated inputs.

A task whose cases all expect the same value is passed by a function returning that value. The
task's inputs are mutated (`plbench.operators.inputs`); the reference's outputs on the inputs it
accepts become new cases, those whose output differs first, so the constant fails. A reference that
gives the same output on every generated input too is constant itself: the task is rejected.
"""

from __future__ import annotations

from dataclasses import replace

from plbench.compare import Tolerance, same, same_unordered
from plbench.mbpp.artifacts import TypedTask, ints_fit_bigint
from plbench.mbpp.extract import TestCase
from plbench.operators.inputs import GENERATION_LIMITS, accepted_outputs, mutated_inputs
from plbench.records import Rejection
from plbench.sandbox import SandboxLimits, run_reference

STAGE = "constant_augmentation"
CANDIDATE_INPUTS = 40  # mutations tried per task
KEPT_INPUTS = 8  # generated cases added per task


def _same(task: TypedTask, a, b) -> bool:
    if task.comparison.unordered:
        return same_unordered(a, b)
    return same(a, b, Tolerance(task.comparison.atol, task.comparison.rtol))


def is_constant(task: TypedTask) -> bool:
    """Every case expects the same output: a constant candidate passes the task."""
    first = task.cases[0].expected
    return all(_same(task, first, c.expected) for c in task.cases)


def augment_constant(task: TypedTask, code: str, limits: SandboxLimits = GENERATION_LIMITS) -> TypedTask | Rejection:
    """The task with generated cases a constant fails, or a rejection when none is found."""
    seeds = [c.args for c in task.cases]
    inputs = mutated_inputs(task.task_id, task.signature, seeds, CANDIDATE_INPUTS)
    result = run_reference(code, task.entry_point, inputs, limits)
    kept, refused = accepted_outputs(inputs, result, task.signature.returns)
    constant = task.cases[0].expected
    value = (lambda v: set(v)) if task.comparison.unordered else (lambda v: v)
    differing = [k for k in kept if not _same(task, constant, value(k.output))]
    if not differing:
        detail = f"{len(inputs)} generated inputs, {len(kept)} accepted, none changes the output {constant!r}"
        return Rejection(task.subset, task.source_id, STAGE, "constant_result", f"{detail}; {refused}"[:1000])
    chosen = (differing + [k for k in kept if k not in differing])[:KEPT_INPUTS]
    new = tuple(TestCase(k.args, value(k.output), f"generated[{i}]") for i, k in enumerate(chosen))
    cases = task.cases + new
    note = f"{len(new)} generated inputs added (outputs from the reference): every original case expects one value"
    return replace(task, cases=cases, ints_fit_bigint=ints_fit_bigint(cases), notes=task.notes + (note,))
