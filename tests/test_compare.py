"""The one value-comparison rule, each clause with its exact verdicts."""

import math

import pytest

from plbench.compare import EXACT, Tolerance, same, same_unordered

TOL = Tolerance(atol=1e-6, rtol=1e-7)


@pytest.mark.parametrize(
    "expected, actual, tol, verdict",
    [
        (1, 1, EXACT, True),
        (1, 2, EXACT, False),
        (1, 1.0, EXACT, True),
        (5.343044360922686e16, 53430443609226860, EXACT, True),  # jsonb's shortest digits of a float
        (2**63 + 1, 2**63, EXACT, False),  # ints stay exact however large
        (1.0, 1.0 + 5e-7, TOL, True),
        (1.0, 1.0 + 5e-6, TOL, False),
        (1.0, 1.0 + 5e-7, EXACT, False),
        (math.nan, math.nan, EXACT, True),
        (math.nan, 1.0, EXACT, False),
        ((1, [2]), [1, (2,)], EXACT, True),  # lists and tuples are one kind
        ([1, 2], [2, 1], EXACT, False),  # and ordered
        ([1.0], [1.0 + 5e-7], TOL, True),  # tolerance reaches inside collections
        ({"a": 1.0}, {"a": 1.0 + 5e-7}, TOL, True),
        ({"a": 1}, {"b": 1}, EXACT, False),
        ({1, 2}, {2, 1}, EXACT, True),
        ({(1, 2)}, {(1, 2)}, EXACT, True),
        ({}, set(), EXACT, True),  # `{}` written for an empty set
        ({}, {1}, EXACT, False),
        ("", None, EXACT, False),
        ("a", "a", EXACT, True),
        (True, True, EXACT, True),
    ],
)
def test_same(expected, actual, tol, verdict):
    assert same(expected, actual, tol) is verdict


def test_same_unordered_takes_lists_and_sets_alike_and_refuses_a_scalar():
    assert same_unordered([1, 2, 2], {2, 1}) and same_unordered([[1], (2,)], [(2,), [1]])
    assert same_unordered([math.nan], [math.nan])
    assert not same_unordered([1, 2], [1]) and not same_unordered([1], 1)
