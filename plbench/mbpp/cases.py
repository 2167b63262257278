"""Turn raw MBPP / MBPP+ problems into extracted tasks (entry point, parameters, test cases).

MBPP: the cases are the asserts of `test_list`. MBPP+: the inputs are
`base_input` + `plus_input`; the expected outputs come from running the
canonical solution in the sandbox (`plbench.sandbox`), since the raw file
holds none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plbench.mbpp.extract import (
    Comparison,
    ExtractedTask,
    ExtractionError,
    ParsedAssert,
    TestCase,
    merge_comparisons,
    parameter_names,
    parse_assert,
)
from plbench.records import RawProblem, Rejection
from plbench.values import dumps

STAGE = "test_extraction"


def _case_rejection(problem: RawProblem, origin: str, reason: str, detail: str) -> Rejection:
    return Rejection(problem.subset, problem.source_id, STAGE, reason, f"{origin}: {detail}", level="case")


def _parse_asserts(problem: RawProblem) -> tuple[list[tuple[str, ParsedAssert]], list[Rejection]]:
    parsed, dropped = [], []
    for i, source in enumerate(problem.test_list):
        origin = f"test_list[{i}]"
        try:
            parsed.append((origin, parse_assert(source)))
        except ExtractionError as exc:
            dropped.append(_case_rejection(problem, origin, exc.reason_code, exc.detail))
    return parsed, dropped


def _no_cases(dropped: list[Rejection], what: str) -> ExtractionError:
    """A task left without cases is rejected for its cases' reason when they share one."""
    reasons = {r.reason_code for r in dropped}
    reason = reasons.pop() if len(reasons) == 1 else "no_test_cases"
    return ExtractionError(reason, f"{what}: " + "; ".join(r.detail for r in dropped[:5])[:1000])


def _single_entry_point(parsed: list[ParsedAssert]) -> str:
    names = sorted({p.function for p in parsed})
    if len(names) != 1:
        raise ExtractionError("inconsistent_entry_point", f"asserts call different functions: {names}")
    return names[0]


def extract_mbpp(problem: RawProblem) -> tuple[ExtractedTask, list[Rejection]]:
    """Cases from the asserts; raises ExtractionError when no usable case remains."""
    if problem.test_setup_code.strip():
        raise ExtractionError("needs_setup_code", "the tests rely on test_setup_code")
    parsed, dropped = _parse_asserts(problem)
    if not parsed:
        raise _no_cases(dropped, "no assert could be extracted")
    asserts = [p for _, p in parsed]
    entry = _single_entry_point(asserts)
    task = ExtractedTask(
        subset=problem.subset,
        source_id=problem.source_id,
        entry_point=entry,
        param_names=parameter_names(problem.reference_code, entry),
        cases=tuple(TestCase(p.args, p.expected, origin) for origin, p in parsed),
        comparison=merge_comparisons(asserts),
        base_case_count=len(parsed),
        notes=("listed in sanitized-mbpp.json, the hand-verified subset",) if problem.extra.get("in_sanitized") else (),
    )
    return task, dropped


# ---- MBPP+ ---------------------------------------------------------------


@dataclass(frozen=True)
class PlusPlan:
    """What to run in the sandbox for one MBPP+ task."""

    problem: RawProblem
    entry_point: str
    param_names: tuple[str, ...]
    comparison: Comparison
    inputs: tuple[tuple[str, tuple], ...]  # (origin, args) with tuples restored
    truthy: bool = False  # the task's example asserts only the truth of the result

    def sandbox_job(self) -> tuple[str, str, list[tuple]]:
        """(code, function to call, argument tuples) for the sandbox.

        When the example assertion is `assert f(x)`, the reference may return any truthy
        object (a re.Match, say); the expected output is its truth value.
        """
        args = [a for _, a in self.inputs]
        if not self.truthy:
            return self.problem.reference_code, self.entry_point, args
        wrapper = f"\n\ndef __plbench_truth__(*args):\n    return bool({self.entry_point}(*args))\n"
        return self.problem.reference_code + wrapper, "__plbench_truth__", args


def restore_tuples(value: Any, template: Any) -> Any:
    """Give a JSON-decoded value the tuples its template (an assert literal) has.

    JSON has no tuples, so MBPP+ inputs arrive as lists; the task's own example
    assertion shows where the Python values are tuples.
    """
    if isinstance(template, tuple) and isinstance(value, list):
        return (
            tuple(restore_tuples(v, template[i] if i < len(template) else template[-1]) for i, v in enumerate(value))
            if template
            else tuple(value)
        )
    if isinstance(template, list) and isinstance(value, list) and template:
        return [restore_tuples(v, template[0]) for v in value]
    if isinstance(template, dict) and isinstance(value, dict) and template:
        key_t, val_t = next(iter(template.items()))
        return {restore_tuples(k, key_t): restore_tuples(v, val_t) for k, v in value.items()}
    return value


def plan_mbpp_plus(problem: RawProblem) -> PlusPlan:
    """Entry point, parameters, comparison and tuple-restored inputs of an MBPP+ task."""
    entry = problem.entry_point or ""
    names = parameter_names(problem.reference_code, entry)
    prompt_asserts = [
        line for line in problem.extra.get("prompt", "").splitlines() if line.strip().startswith("assert")
    ]
    parsed = []
    for source in prompt_asserts + list(problem.test_list):
        try:
            parsed.append(parse_assert(source))
        except ExtractionError:
            continue  # the example is documentation here; the inputs come from base/plus_input
    # The prompt's example decides set comparison; base assertions never wrap in set().
    comparison = parsed[0].comparison if parsed else Comparison()
    if problem.atol:
        comparison = Comparison(comparison.unordered, float(problem.atol), comparison.rtol)
    template = parsed[0].args if parsed else None
    inputs = []
    for field_name in ("base_input", "plus_input"):
        for i, args in enumerate(getattr(problem, field_name) or []):
            restored = tuple(
                restore_tuples(a, template[j]) if template and j < len(template) else a for j, a in enumerate(args)
            )
            inputs.append((f"{field_name}[{i}]", restored))
    return PlusPlan(problem, entry, names, comparison, tuple(inputs), truthy=bool(parsed) and parsed[0].truthy)


# A test case whose arguments and expected value encode to more than this is dropped
# (`case_too_large`): test blocks stay executable (Oracle caps the size of a PL/SQL unit)
# and a benchmark case is meant to be read, not to be a data dump.
MAX_CASE_BYTES = 64 * 1024
# Cases are kept in order (base inputs first) until their encodings add up to this; the rest
# are dropped (`suite_too_large`). A multi-megabyte test block parses for seconds and exceeds
# what an Oracle PL/SQL block can hold.
MAX_SUITE_BYTES = 512 * 1024

_SANDBOX_CASE_REASONS = {
    "error": "reference_raised",
    "timeout": "reference_timeout",
    "unsupported_output": "unsupported_output_type",
}


def cases_from_sandbox(plan: PlusPlan, result) -> tuple[ExtractedTask, list[Rejection]]:
    """Pair each input with the reference output; failed cases become case rejections."""
    problem = plan.problem
    if result.status != "ok":
        raise ExtractionError(f"reference_{result.status}", f"reference solution: {result.detail}"[:500])
    cases, dropped, suite_bytes = [], [], 0
    for (origin, args), outcome in zip(plan.inputs, result.cases):
        size = len(dumps(args)) + len(dumps(outcome.value)) if outcome.status == "ok" else 0
        if outcome.status == "ok" and plan.comparison.unordered and not _hashable_items(outcome.value):
            dropped.append(
                _case_rejection(
                    problem,
                    origin,
                    "unordered_unhashable",
                    "the task compares results as sets, but this one is not a set",
                )
            )
        elif outcome.status == "ok" and size > MAX_CASE_BYTES:
            dropped.append(
                _case_rejection(
                    problem,
                    origin,
                    "case_too_large",
                    f"arguments and result encode to more than {MAX_CASE_BYTES} bytes",
                )
            )
        elif outcome.status == "ok" and suite_bytes + size > MAX_SUITE_BYTES:
            dropped.append(
                _case_rejection(
                    problem, origin, "suite_too_large", f"the task's cases already encode to {suite_bytes} bytes"
                )
            )
        elif outcome.status == "ok":
            suite_bytes += size
            expected = set(outcome.value) if plan.comparison.unordered else outcome.value
            cases.append(TestCase(args, expected, origin))
        else:
            dropped.append(_case_rejection(problem, origin, _SANDBOX_CASE_REASONS[outcome.status], outcome.detail))
    if not cases:
        raise _no_cases(dropped, "the reference solution produced no usable output")
    notes = ()
    if result.mutated_inputs:
        notes = (
            f"the reference solution mutates its arguments in {len(result.mutated_inputs)} cases; "
            "expected outputs were computed on fresh copies",
        )
    base = sum(1 for case in cases if case.origin.startswith("base_input"))
    task = ExtractedTask(
        problem.subset,
        problem.source_id,
        plan.entry_point,
        plan.param_names,
        tuple(cases),
        plan.comparison,
        base_case_count=base,
        notes=notes,
    )
    return task, dropped


def _hashable_items(value: Any) -> bool:
    try:
        set(value)
    except TypeError:
        return False
    return isinstance(value, (list, tuple, set, frozenset))
