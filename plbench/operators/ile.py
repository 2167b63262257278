"""Iterative Logic Enhancement on MBPP tasks (subset `mbpp_ile`).

A round adds one business rule to the Python reference and one clause to the requirement. The
new reference runs in the sandbox on the task's inputs plus generated inputs (and the inputs the
rule itself needs, such as None for a None rule); its outputs are the new expected values. The
round is accepted only when the new reference accepts every input the previous one did, its
outputs fit one signature, and some case differs from the previous reference's outcome (the
previous reference is executed on every input it has not seen). The enhanced task then goes
through the existing MBPP validation: task emission, replay with mutants, round trip.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from plbench.compare import Tolerance, same, same_unordered
from plbench.mbpp.artifacts import TypedTask
from plbench.mbpp.extract import ExtractedTask, ExtractionError, TestCase, parameter_names
from plbench.mbpp.pytypes import Signature, TypingError
from plbench.mbpp.typing_stage import type_task
from plbench.operators.framework import Ledger, Operator, Proposal, Proposer, Rejected, run_round
from plbench.operators.inputs import GENERATION_LIMITS, accepted_outputs, mutated_inputs
from plbench.records import Rejection
from plbench.sandbox import SandboxLimits, SandboxResult, run_reference

SUBSET = "mbpp_ile"
STAGE = "ile"
GENERATED_INPUTS = 8  # per task, on top of its own
MAX_CASES = 40  # a test block stays readable and quick to replay
ERROR = object()  # the outcome of an input the reference raised on


@dataclass(frozen=True)
class SandboxExecutor:
    """Runs Python references on argument tuples in the sandbox."""

    limits: SandboxLimits = GENERATION_LIMITS

    def run(self, code: str, entry: str, args: list[tuple]) -> SandboxResult:
        return run_reference(code, entry, args, self.limits)


@dataclass(frozen=True)
class IleState:
    """One version of an enhanced task: its reference, inputs and the reference's outcomes."""

    task: TypedTask  # the source task (id, text, comparison)
    code: str
    params: tuple[str, ...]
    cases: tuple[TestCase, ...]  # expected = the reference's output
    signature: Signature
    clauses: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    own_origins: frozenset = field(default_factory=frozenset)  # the source task's cases

    @property
    def round(self) -> int:
        return len(self.rules)

    @property
    def outcomes(self) -> dict[str, Any]:
        return {c.origin: c.expected for c in self.cases}

    def typed_task(self, notes: tuple[str, ...] = ()) -> TypedTask:
        """This version as an `mbpp_ile` task: the requirement with its clauses, the reference's cases."""
        task = self.task
        extracted = ExtractedTask(
            SUBSET, task.source_id, task.entry_point, self.params, self.cases, task.comparison, len(self.cases)
        )
        typed, _ = type_task(extracted, self.text())
        return replace(typed, notes=task.notes + notes)

    def text(self) -> str:
        if not self.clauses:
            return self.task.text
        rules = [f"{i}. {c}" for i, c in enumerate(self.clauses, start=1)]
        return "\n".join([self.task.text.strip(), "", "Additional requirements:", *rules])


def initial_state(task: TypedTask, code: str, executor: SandboxExecutor) -> IleState | Rejection:
    """The source task's inputs plus generated ones, with the source reference's outputs."""
    seeds = [c.args for c in task.cases]
    generated = mutated_inputs(task.task_id, task.signature, seeds, GENERATED_INPUTS)
    origins = [c.origin for c in task.cases] + [f"generated[{i}]" for i in range(len(generated))]
    args = seeds + generated
    result = executor.run(code, task.entry_point, args)
    kept, refused = accepted_outputs(args, result, task.signature.returns)
    by_args = {repr(k.args): k.output for k in kept}
    own = [c for c in task.cases if repr(c.args) not in by_args]
    if result.status != "ok" or own:
        detail = refused or f"the reference fails {len(own)} of the task's own inputs"
        return _reject(task, "reference_fails_own_inputs", detail)
    cases = tuple(
        TestCase(a, _expected(task, by_args[repr(a)]), o) for a, o in zip(args, origins) if repr(a) in by_args
    )
    params = tuple(n for n, _ in task.signature.params)
    own_origins = frozenset(c.origin for c in task.cases)
    return IleState(task, code, params, cases[:MAX_CASES], task.signature, own_origins=own_origins)


def _expected(task: TypedTask, value: Any) -> Any:
    return set(value) if task.comparison.unordered and isinstance(value, (list, tuple)) else value


def _reject(task: TypedTask, reason: str, detail: str) -> Rejection:
    return Rejection(SUBSET, task.source_id, STAGE, reason, detail[:1000])


def _parses(code: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            ast.parse(code)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return None


def realize(old: IleState, proposal: Proposal, executor: SandboxExecutor) -> IleState | Rejected:
    """Run the proposed reference on its inputs; the outputs become the new cases."""
    entry = old.task.entry_point
    problem = _parses(proposal.code)
    if problem:
        return Rejected("does_not_compile", problem, repairable=True)
    try:
        params = parameter_names(proposal.code, entry)
    except ExtractionError as exc:
        return Rejected(exc.reason_code, exc.detail, repairable=True)
    if params != proposal.params:
        return Rejected("signature_changed", f"{entry}{params} instead of {entry}{proposal.params}", repairable=True)
    origins = [o for o, _ in proposal.inputs]
    args = [a for _, a in proposal.inputs]
    result = executor.run(proposal.code, entry, args)
    if result.status != "ok":
        return Rejected("does_not_run", f"{result.status}: {result.detail}"[:500], repairable=True)
    failed = [o for o, c in zip(origins, result.cases) if c.status != "ok" and o in old.outcomes]
    if failed:
        first = next(c for o, c in zip(origins, result.cases) if o == failed[0])
        return Rejected("fails_known_inputs", f"{failed[0]}: {first.status} {first.detail}"[:500], repairable=True)
    cases = tuple(
        TestCase(a, _expected(old.task, c.value), o) for o, a, c in zip(origins, args, result.cases) if c.status == "ok"
    )
    extracted = ExtractedTask(SUBSET, old.task.source_id, entry, params, cases, old.task.comparison, len(cases))
    try:
        typed, _ = type_task(extracted, old.task.text)
    except TypingError as exc:
        return Rejected("untypable", f"{exc.reason_code}: {exc.detail}")
    if len(typed.cases) < len(cases):
        return Rejected("untypable", "some outputs do not fit the signature the others give")
    new = replace(old, code=proposal.code, params=params, cases=cases, signature=typed.signature)
    return replace(new, clauses=old.clauses + (proposal.clause,), rules=old.rules + (proposal.rule_id,))


def differs(old_value: Any, new_value: Any, task: TypedTask) -> bool:
    if old_value is ERROR:
        return True
    if task.comparison.unordered:
        return not same_unordered(old_value, new_value)
    return not same(old_value, new_value, Tolerance(task.comparison.atol, task.comparison.rtol))


def distinguishes(old: IleState, new: IleState, executor: SandboxExecutor) -> Rejected | None:
    """Some case's outcome under the new reference differs from the previous reference's."""
    before = old.outcomes
    unseen = [c for c in new.cases if c.origin not in before]
    if unseen:
        result = executor.run(old.code, old.task.entry_point, [c.args for c in unseen])
        if result.status != "ok":
            return None  # the previous reference cannot even run on them: the new one differs
        for case, outcome in zip(unseen, result.cases):
            before[case.origin] = _expected(old.task, outcome.value) if outcome.status == "ok" else ERROR
    changed = [c.origin for c in new.cases if differs(before[c.origin], c.expected, old.task)]
    if not changed:
        return Rejected("changes_nothing", f"all {len(new.cases)} cases give what the previous reference gives")
    return None


def not_constant(old: IleState, new: IleState, executor: SandboxExecutor) -> Rejected | None:
    """A constant candidate must fail the enhanced task: some two cases expect different outputs."""
    first = new.cases[0].expected
    if all(not differs(first, c.expected, new.task) for c in new.cases):
        return Rejected("constant_result", f"every case expects {first!r}"[:300])
    return None


ILE_MBPP = Operator("ile_mbpp", realize, (distinguishes, not_constant))


@dataclass(frozen=True)
class Enhanced:
    task: TypedTask  # subset mbpp_ile, the requirement with its clauses
    code: str
    proposer: str
    rules: tuple[str, ...]

    @property
    def rounds(self) -> int:
        return len(self.rules)


def enhance(
    task: TypedTask, code: str, proposer: Proposer, executor: SandboxExecutor, rounds: int, ledger: Ledger
) -> Enhanced | Rejection:
    """Up to `rounds` accepted rounds on one MBPP task; rejected when none is accepted."""
    state = initial_state(task, code, executor)
    if isinstance(state, Rejection):
        return state
    for round_no in range(1, rounds + 1):
        new = run_round(ILE_MBPP, state, state, proposer, executor, ledger, (task.task_id, round_no), 4)
        if new is None:
            break
        state = new
    if not state.rules:
        reasons = sorted({e.reason_code for e in ledger.entries if e.task_id == task.task_id})
        return _reject(task, "no_round_accepted", "every proposal was rejected: " + ", ".join(reasons))
    notes = (f"ILE rounds: {', '.join(state.rules)} (proposer {proposer.name})",)
    return Enhanced(state.typed_task(notes), state.code, proposer.name, state.rules)
