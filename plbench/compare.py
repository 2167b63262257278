"""The one value-comparison rule: round trip, crosscheck, gold equivalence and grading all use it.

`same(expected, actual, tol)`:
- numbers (bool is not a number here): ints compare exactly; where a float is involved, equal as floats
  (jsonb hands a float's shortest digits back as an integer: 5.343044360922686e+16 returns as
  53430443609226860), else within `|actual − expected| ≤ atol + rtol·|expected|`; NaN equals NaN;
- lists and tuples are one kind (JSON and SQL arrays have no tuples), compared element-wise in order;
- dicts by their keys, values compared by this rule;
- sets order-free; `{}` equals `set()` (tests write `{}` for an empty set);
- anything else by `==`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tolerance:
    atol: float = 0.0
    rtol: float = 0.0


EXACT = Tolerance()


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_number(expected: int | float, actual: int | float, tol: Tolerance) -> bool:
    if isinstance(expected, int) and isinstance(actual, int):
        return expected == actual
    a, b = float(expected), float(actual)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(b - a) <= tol.atol + tol.rtol * abs(a)


def _hashable(value: Any) -> Any:
    """A stand-in for order-free comparison: lists and tuples alike, sets and dicts frozen."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_hashable(v) for v in value)
    if isinstance(value, dict):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # NaN != NaN would make a set of it never equal
    return value


def same_unordered(expected: Any, actual: Any) -> bool:
    """The two collections hold the same distinct elements, in any order (sets, or unordered results)."""
    try:
        return set(map(_hashable, expected)) == set(map(_hashable, actual))
    except TypeError:  # not iterable, or unhashable inside: cannot be the expected collection
        return False


def same(expected: Any, actual: Any, tol: Tolerance = EXACT) -> bool:
    if is_number(expected) and is_number(actual):
        return _same_number(expected, actual, tol)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same(e, a, tol) for e, a in zip(expected, actual))
    if isinstance(expected, (set, frozenset, dict)) and not expected and isinstance(actual, (set, frozenset, dict)):
        return not actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k], tol) for k, v in expected.items())
    if isinstance(expected, (set, frozenset)) and isinstance(actual, (set, frozenset)):
        return same_unordered(expected, actual)
    return expected == actual
