"""Signature stage: one signature per task, consistent with every kept test case.

MBPP: the signature unifies every case, or the task is rejected with the typing reason.
MBPP+: the generated `plus_input` cases often use other types than the task's
own examples (bools in an int list, nested lists in a flat one). The signature
is inferred from the base cases alone, and each plus case that does not fit it
is dropped with a case-level rejection: the task keeps its examples' contract.
"""

from __future__ import annotations

from plbench.mbpp.artifacts import TypedTask, ints_fit_bigint
from plbench.mbpp.extract import ExtractedTask, TestCase
from plbench.mbpp.pytypes import Signature, conforms, infer_signature
from plbench.records import Rejection
from plbench.types import PyType

STAGE = "signature_inference"


def _infer(task: ExtractedTask, cases: tuple[TestCase, ...]) -> Signature:
    signature = infer_signature(list(task.param_names), [(c.args, c.expected) for c in cases])
    if task.comparison.unordered and signature.returns.kind in ("list", "tuple_seq"):
        signature = Signature(signature.params, PyType("set", signature.returns.args, signature.returns.nullable))
    return signature


def _fits(signature: Signature, case: TestCase) -> bool:
    return all(conforms(v, t) for v, (_, t) in zip(case.args, signature.params)) and conforms(
        case.expected, signature.returns
    )


def type_task(task: ExtractedTask, text: str) -> tuple[TypedTask, list[Rejection]]:
    """The typed task and the case-level rejections; raises TypingError when the task cannot be typed.

    MBPP+ signatures come from the base inputs (the task's own examples define its contract);
    a generated plus input that does not fit is dropped rather than widening every type.
    """
    defining = task.cases[: task.base_case_count] if task.subset == "mbpp_plus" and task.base_case_count else task.cases
    signature = _infer(task, defining)
    cases = tuple(c for c in task.cases if _fits(signature, c))
    dropped = [
        Rejection(
            task.subset,
            task.source_id,
            STAGE,
            "case_type_mismatch",
            f"{c.origin}: does not fit the signature inferred from the base inputs",
            level="case",
        )
        for c in task.cases
        if not _fits(signature, c)
    ]
    notes = task.notes
    if any(x.kind == "unknown" for t in signature.all_types() for x in t.walk()):
        notes += ("only empty collections were seen for some element type: it defaults to int",)
    typed = TypedTask(
        task.subset,
        task.source_id,
        text,
        task.entry_point,
        signature,
        cases,
        task.comparison,
        ints_fit_bigint(cases),
        notes,
    )
    return typed, dropped
