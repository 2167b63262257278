"""AST extraction of MBPP asserts: every supported form, every rejection reason."""

import pytest

from plbench.mbpp.cases import extract_mbpp, plan_mbpp_plus, restore_tuples
from plbench.mbpp.extract import DEFAULT_ATOL, ExtractionError, parameter_names, parse_assert
from plbench.records import RawProblem


def test_equality_assert_gives_literal_args_and_expected():
    parsed = parse_assert("assert min_cost([[1, 2], [4, 8]], 1, 1) == 8")
    assert (parsed.function, parsed.args, parsed.expected) == ("min_cost", ([[1, 2], [4, 8]], 1, 1), 8)
    assert not parsed.comparison.unordered and parsed.comparison.atol == DEFAULT_ATOL


def test_mirrored_bare_and_negated_forms():
    assert parse_assert("assert (4, 5) == similar((3, 4), (5,))").expected == (4, 5)
    assert parse_assert("assert is_even(2)").expected is True
    assert parse_assert("assert not is_even(3)").expected is False


def test_set_wrapped_assert_is_unordered_with_a_set_expected():
    parsed = parse_assert("assert set(common([1, 2], [2, 1])) == set([2, 1])")
    assert parsed.comparison.unordered and parsed.expected == {1, 2}


def test_isclose_takes_its_tolerances():
    parsed = parse_assert("assert math.isclose(area(2), 12.56, rel_tol=0.001)")
    assert parsed.expected == 12.56 and parsed.comparison.rtol == 0.001 and parsed.comparison.atol == 0.0


def test_constant_arithmetic_is_folded_but_names_are_not():
    assert parse_assert("assert p(10, 1.0/3) == 0.5").args == (10, 1.0 / 3)
    assert parse_assert("assert p(5 - 3) == 1").args == (2,)
    with pytest.raises(ExtractionError) as err:
        parse_assert("assert p(root) == 1")
    assert err.value.reason_code == "non_literal_expression"


@pytest.mark.parametrize(
    "source, reason",
    [
        ("assert f(1) != 2", "unsupported_assert_form"),
        ("assert f(x=1) == 2", "keyword_arguments"),
        ("assert f(1j) == 2", "unsupported_value_type"),
        ("assert f(1) == (", "syntax_error"),
        ("x = 1", "unsupported_assert_form"),
        ("assert f(__import__('os').system('id')) == 0", "non_literal_expression"),
    ],
)
def test_rejection_reasons(source, reason):
    with pytest.raises(ExtractionError) as err:
        parse_assert(source)
    assert err.value.reason_code == reason


def _problem(tests, code="def f(a, b):\n    return a", setup=""):
    return RawProblem("mbpp", "7", "mbpp/mbpp.jsonl", 7, "Do f.", None, code, tests, setup)


def test_extract_mbpp_keeps_good_cases_and_drops_bad_ones_at_case_level():
    task, dropped = extract_mbpp(_problem(["assert f(1, 2) == 1", "assert f(y, 2) == 1"]))
    assert task.entry_point == "f" and task.param_names == ("a", "b")
    assert [c.args for c in task.cases] == [(1, 2)]
    assert [(r.level, r.reason_code) for r in dropped] == [("case", "non_literal_expression")]


@pytest.mark.parametrize(
    "tests, setup, reason",
    [
        (["assert f(1, 2) == 1", "assert g(1, 2) == 1"], "", "inconsistent_entry_point"),
        (["assert f(1, 2) == 1"], "root = Node(1)", "needs_setup_code"),
        (["assert h(1) == 1"], "", "entry_point_not_defined"),
        (["assert f(q, 2) == 1"], "", "non_literal_expression"),
    ],
)
def test_extract_mbpp_task_rejections(tests, setup, reason):
    with pytest.raises(ExtractionError) as err:
        extract_mbpp(_problem(tests, setup=setup))
    assert err.value.reason_code == reason


def test_parameter_names_refuses_variadic_functions():
    assert parameter_names("def f(x, y=2):\n    return x", "f") == ("x", "y")
    with pytest.raises(ExtractionError) as err:
        parameter_names("def f(*xs):\n    return xs", "f")
    assert err.value.reason_code == "variadic_signature"


def test_restore_tuples_follows_the_example_assertion():
    template = ((1, 2), [(1, "a")])
    assert restore_tuples([3, 4, 5], template[0]) == (3, 4, 5)
    assert restore_tuples([[2, "b"], [3, "c"]], template[1]) == [(2, "b"), (3, "c")]
    assert restore_tuples([1, 2], [0]) == [1, 2]


def test_plan_mbpp_plus_restores_tuples_and_reads_set_comparison_from_the_prompt():
    problem = RawProblem(
        "mbpp_plus",
        "Mbpp/2",
        "x.jsonl",
        1,
        "shared elements",
        "similar",
        "def similar(a, b):\n    return a",
        ["assert similar((3, 4), (4, 5)) == (4,)"],
        base_input=[[[3, 4], [4, 5]]],
        plus_input=[[[1], [1]]],
        extra={"prompt": '"""\nshared\nassert set(similar((3, 4), (4, 5))) == set((4,))\n"""'},
    )
    plan = plan_mbpp_plus(problem)
    assert plan.comparison.unordered
    assert [args for _, args in plan.inputs] == [((3, 4), (4, 5)), ((1,), (1,))]
    assert [origin for origin, _ in plan.inputs] == ["base_input[0]", "plus_input[0]"]
