"""Mutant outputs: each differs from the expected one beyond any tolerance the harness allows."""

import pytest

from plbench.mbpp.extract import Comparison
from plbench.types import BOOL, FLOAT, INT, STR, PyType
from plbench.validation.mutants import mutants, perturb
from tests.helpers import typed_task


@pytest.mark.parametrize(
    "value, t, expected",
    [
        (3, INT, 4),
        (2.5, FLOAT, 6.0),
        ("ab", STR, "abx"),
        (True, BOOL, False),
        (None, STR, "x"),
        ([1, 2], PyType.list_of(INT), [1]),
        ([], PyType.list_of(INT), [0]),
        ((1, 2), PyType("tuple_seq", (INT,)), (1,)),
        ({0, 1}, PyType("set", (INT,)), {1}),
        ({1}, PyType("set", (INT,)), {0, 1}),
        ({"x", "b", "a"}, PyType("set", (STR,)), {"b", "x"}),  # whatever order the hash seed gives the set
        ({"a": 1}, PyType("dict", (STR, INT)), {"a": 2}),
        ((1, "a"), PyType("record", (INT, STR)), (2, "a")),
        ("s", PyType("variant", (INT, STR)), "sx"),
        ([1, [2]], PyType("json"), [1]),
    ],
)
def test_perturb_changes_every_kind_of_value(value, t, expected):
    assert perturb(value, t) == expected


def test_mutants_of_an_ordered_result_reverse_or_rotate_it():
    task = typed_task(["n"], [((1,), [1, 2, 3]), ((2,), [7, 7])])
    by_name = {m.name: m.outputs for m in mutants(task)}
    assert by_name == {"null": [None, None], "other_case": [[7, 7], [1, 2, 3]], "reorder": [[3, 2, 1], [7, 7]]}


def test_mutants_fall_back_to_perturbation_when_outputs_cannot_be_told_apart():
    task = typed_task(["n"], [((1,), {5}), ((2,), {5})], comparison=Comparison(unordered=True))
    by_name = {m.name: m.outputs for m in mutants(task)}
    assert by_name["other_case"] == [{0, 5}, {0, 5}] and by_name["perturb"] == [{0, 5}, {0, 5}]
