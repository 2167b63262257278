"""AST extraction of test cases from MBPP asserts and MBPP+ inputs.

MBPP tests are assert strings. Each supported form becomes one `TestCase`
(literal arguments, literal expected value) plus the task's `Comparison`:

    assert f(<lits>) == <lit>          exact (floats within tolerance)
    assert <lit> == f(<lits>)          same, mirrored
    assert f(<lits>)  /  assert not f(<lits>)      expected True / False
    assert math.isclose(f(<lits>), <lit>, rel_tol=r, abs_tol=a)
    assert set(f(<lits>)) == set(<lit>) / {<lits>}  unordered: the result is a set

Nothing is evaluated: values come from `ast.literal_eval` on literal nodes only,
so any name, call or operator in an argument rejects the assert
(`non_literal_expression`).
"""

from __future__ import annotations

import ast
import operator
import warnings
from dataclasses import dataclass, field
from typing import Any

# EvalPlus's rule: floats compare with |a - b| <= atol + rtol * |b|; atol defaults to 1e-6.
DEFAULT_ATOL = 1e-6
DEFAULT_RTOL = 1e-7


class ExtractionError(ValueError):
    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class Comparison:
    unordered: bool = False  # compare the result as a set (the assert wraps it in set())
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL


@dataclass(frozen=True)
class TestCase:
    args: tuple
    expected: Any
    origin: str  # where the case came from, e.g. "test_list[2]" or "plus_input[17]"


@dataclass(frozen=True)
class ParsedAssert:
    function: str
    args: tuple
    expected: Any
    comparison: Comparison
    truthy: bool = False  # `assert f(...)` / `assert not f(...)`: only the truth value is tested


@dataclass(frozen=True)
class ExtractedTask:
    subset: str
    source_id: str
    entry_point: str
    param_names: tuple[str, ...]
    cases: tuple[TestCase, ...]
    comparison: Comparison
    base_case_count: int  # leading cases that define the task (MBPP asserts, MBPP+ base_input)
    notes: tuple[str, ...] = field(default=())


_FOLDABLE = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def literal(node: ast.AST, what: str) -> Any:
    """The value of a literal node, or ExtractionError naming what was not literal."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        value = _fold_float_arithmetic(node)
        if value is None:
            raise ExtractionError(
                "non_literal_expression", f"{what} is not a literal: {ast.unparse(node)[:200]}"
            ) from exc
    _check_supported(value, what)
    return value


def _fold_float_arithmetic(node: ast.AST) -> int | float | None:
    """`1.0/3`-style arithmetic on number constants (MBPP writes some inputs so); nothing else."""
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLDABLE:
        left, right = (_fold_float_arithmetic(n) for n in (node.left, node.right))
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        return _FOLDABLE[type(node.op)](left, right)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _check_supported(value: Any, what: str) -> None:
    if isinstance(value, (bytes, complex)) or value is Ellipsis:
        raise ExtractionError("unsupported_value_type", f"{what} has a {type(value).__name__} value")
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _check_supported(item, what)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_supported(k, what)
            _check_supported(v, what)


def _call_parts(node: ast.AST, what: str) -> tuple[str, tuple]:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ExtractionError("unsupported_assert_form", f"{what} is not a call of a named function")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise ExtractionError("keyword_arguments", f"{what} passes keyword or starred arguments")
    args = tuple(literal(a, f"argument {i + 1} of {node.func.id}") for i, a in enumerate(node.args))
    return node.func.id, args


def _is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
    )


def parse_assert(source: str) -> ParsedAssert:
    """One assert statement → function name, literal args, expected value, comparison."""
    try:
        module = ast.parse(source.strip())
    except SyntaxError as exc:
        raise ExtractionError("syntax_error", f"assert does not parse: {exc.msg}") from exc
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assert):
        raise ExtractionError("unsupported_assert_form", "not a single assert statement")
    test = module.body[0].test
    if isinstance(test, ast.Compare):
        return _parse_compare(test)
    if _is_call_to(test, "isclose"):
        return _parse_isclose(test)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        name, args = _call_parts(test.operand, "the asserted expression")
        return ParsedAssert(name, args, False, Comparison(), truthy=True)
    name, args = _call_parts(test, "the asserted expression")
    return ParsedAssert(name, args, True, Comparison(), truthy=True)


def _parse_compare(test: ast.Compare) -> ParsedAssert:
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        raise ExtractionError("unsupported_assert_form", "only == comparisons are supported")
    left, right = test.left, test.comparators[0]
    if not isinstance(left, ast.Call) or (
        _is_call_to(left, "set") and not _is_call_to(right, "set") and isinstance(right, ast.Call)
    ):
        left, right = right, left  # literal == call
    if _is_call_to(left, "set") and len(left.args) == 1 and isinstance(left.args[0], ast.Call):
        name, args = _call_parts(left.args[0], "the call inside set()")
        expected = _set_literal(right)
        return ParsedAssert(name, args, expected, Comparison(unordered=True))
    name, args = _call_parts(left, "the left side of ==")
    return ParsedAssert(name, args, literal(right, "the expected value"), Comparison())


def _set_literal(node: ast.AST) -> set:
    if _is_call_to(node, "set") and len(node.args) == 1 and not node.keywords:
        value = literal(node.args[0], "the expected value")
    else:
        value = literal(node, "the expected value")
    try:
        return set(value)
    except TypeError as exc:
        raise ExtractionError("unsupported_value_type", f"the expected set is not hashable: {exc}") from exc


def _parse_isclose(test: ast.Call) -> ParsedAssert:
    if len(test.args) != 2:
        raise ExtractionError("unsupported_assert_form", "isclose needs two positional arguments")
    name, args = _call_parts(test.args[0], "the first argument of isclose")
    expected = literal(test.args[1], "the expected value")
    tolerances = {kw.arg: literal(kw.value, f"isclose {kw.arg}") for kw in test.keywords}
    unknown = set(tolerances) - {"rel_tol", "abs_tol"}
    if unknown:
        raise ExtractionError("unsupported_assert_form", f"isclose keyword {sorted(unknown)}")
    # math.isclose defaults: rel_tol=1e-9, abs_tol=0.
    return ParsedAssert(
        name,
        args,
        expected,
        Comparison(atol=float(tolerances.get("abs_tol", 0.0)), rtol=float(tolerances.get("rel_tol", 1e-9))),
    )


def parameter_names(code: str, entry_point: str) -> tuple[str, ...]:
    """Positional parameter names of the reference solution's entry point."""
    try:
        with warnings.catch_warnings():  # old MBPP code has invalid escapes in plain strings
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            module = ast.parse(code)
    except SyntaxError as exc:
        raise ExtractionError("reference_syntax_error", f"reference code does not parse: {exc.msg}") from exc
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            a = node.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
                raise ExtractionError(
                    "variadic_signature", f"{entry_point} takes *args, **kwargs or keyword-only arguments"
                )
            return tuple(arg.arg for arg in a.args)
    raise ExtractionError("entry_point_not_defined", f"the reference code defines no function {entry_point}")


def merge_comparisons(parsed: list[ParsedAssert]) -> Comparison:
    """The one comparison a task uses; asserts of one task must agree on ordering."""
    if len({p.comparison.unordered for p in parsed}) > 1:
        raise ExtractionError("inconsistent_assert_forms", "some asserts compare as sets, others in order")
    return Comparison(
        unordered=parsed[0].comparison.unordered,
        atol=max(p.comparison.atol for p in parsed),
        rtol=max(p.comparison.rtol for p in parsed),
    )
