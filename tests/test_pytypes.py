"""Signature inference: every unification rule and every typing rejection."""

import pytest

from plbench.mbpp.pytypes import TypingError, conforms, infer_signature
from plbench.types import BOOL, FLOAT, INT, STR, PyType


def sig(cases, names=("a",)):
    return infer_signature(list(names), cases)


def describe(cases, names=("a",)):
    s = sig(cases, names)
    return [t.describe() for _, t in s.params] + [s.returns.describe()]


@pytest.mark.parametrize(
    "cases, expected",
    [
        ([((1,), 2), ((3,), 4)], ["int", "int"]),
        ([((1,), 2.5), ((3,), 4)], ["int", "float"]),
        ([(("x",), None), (("y",), "z")], ["str", "str | None"]),
        ([(([],), True), (([1, 2],), False)], ["list[int]", "bool"]),
        ([(([[1], []],), 1)], ["list[list[int]]", "int"]),
        ([(((1, 2, 3),), 1), (((4,),), 2)], ["tuple[int, ...]", "int"]),
        ([(((1, "a"),), 1), (((2, "b"),), 2)], ["tuple[int, str]", "int"]),
        ([(({"a": 1},), 1)], ["dict[str, int]", "int"]),
        ([(({1, 2},), 1)], ["set[int]", "int"]),
        ([(([1, "a"],), 1)], ["list[Union[int, str]]", "int"]),
        ([(([1.5, "a", True],), 1)], ["list[Union[float, str, bool]]", "int"]),
        ([(({},), 1), (({1},), 2)], ["set[int]", "int"]),
    ],
)
def test_unification_rules(cases, expected):
    assert describe(cases) == expected


def test_empty_collections_default_to_int_elements():
    assert describe([(([],), [])]) == ["list[int]", "list[int]"]


@pytest.mark.parametrize(
    "cases, names, reason",
    [
        ([((1,), {1}), ((2,), 3)], ("a",), "inconsistent_types"),
        ([(([1, {2: 3}],), 1)], ("a",), "inconsistent_types"),
        ([((1,), None), ((2,), None)], ("a",), "returns_none"),
        ([((1,), 1), ((1, 2), 1)], ("a",), "inconsistent_arity"),
        ([((1,), 1)], ("a", "b"), "inconsistent_arity"),
        ([], ("a",), "no_test_cases"),
        ([((None,), 1)], ("a",), "untyped_none"),
    ],
)
def test_typing_rejections(cases, names, reason):
    with pytest.raises(TypingError) as err:
        sig(cases, names)
    assert err.value.reason_code == reason


def test_conforms_checks_values_against_a_signature_type():
    assert conforms([1, 2], PyType.list_of(INT))
    assert not conforms([True], PyType.list_of(INT))
    assert conforms(3, FLOAT) and not conforms(True, FLOAT)
    assert conforms(None, STR.with_nullable()) and not conforms(None, STR)
    assert conforms((1, "a"), PyType("record", (INT, STR))) and not conforms((1,), PyType("record", (INT, STR)))
    assert conforms(False, BOOL)
