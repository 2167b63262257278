"""One test per ILE rule template: the exact wrapper code and requirement clause it writes for a small
task, the exact outputs of the new reference in the sandbox, and the clause in both dialects' prompts."""

import pytest

from plbench.mbpp.stages import emit_artifacts
from plbench.operators import rules
from plbench.operators.ile import IleState, SandboxExecutor, realize
from plbench.operators.proposers import template_proposal
from tests.helpers import typed_task


def state_of(code: str, params: tuple[str, ...], outputs: list[tuple[tuple, object]]) -> IleState:
    task = typed_task(params, outputs)
    return IleState(task, code, params, task.cases, task.signature, own_origins=frozenset(c.origin for c in task.cases))


DOUBLE = ("def f(n):\n    return n * 2\n", ("n",), [((1,), 2), ((2,), 4), ((3,), 6)])
RANGE = ("def f(n):\n    return list(range(n))\n", ("n",), [((1,), [0]), ((2,), [0, 1]), ((3,), [0, 1, 2])])
CLAMP = "    result = f_base(n)\n    if result {op} 4:\n        return 4\n    return result\n"

# rule id -> (task, parameter index, clause, wrapper after the renamed source, outputs of the new reference)
CASES = {
    "cap_result": (
        DOUBLE,
        None,
        "If the result is greater than 4, return 4 instead.",
        "def f(n):\n" + CLAMP.format(op=">"),
        [2, 4, 4],
    ),
    "floor_result": (
        DOUBLE,
        None,
        "If the result is less than 4, return 4 instead.",
        "def f(n):\n" + CLAMP.format(op="<"),
        [4, 4, 6],
    ),
    "abs_result": (
        ("def f(n):\n    return n - 2\n", ("n",), [((1,), -1), ((2,), 0), ((3,), 1)]),
        None,
        "Return the absolute value of the result.",
        "def f(n):\n    return abs(f_base(n))\n",
        [1, 0, 1],
    ),
    "round_result": (
        ("def f(x):\n    return x / 2\n", ("x",), [((1,), 0.5), ((3,), 1.5), ((5,), 2.5)]),
        None,
        "Round the result to the nearest integer (a half rounds to the even neighbour: 2.5 becomes 2) "
        "and return that integer.",
        "def f(x):\n    return round(f_base(x))\n",
        [0, 2, 2],
    ),
    "threshold_parameter": (
        DOUBLE,
        None,
        "The function takes one more argument, `limit`, after the others: when the result is greater "
        "than `limit`, return `limit` instead.",
        "def f(n, limit):\n    result = f_base(n)\n    if result > limit:\n        return limit\n    return result\n",
        [2, 4, 2],  # limits 6, 4, 2: the largest output meets the smallest limit
    ),
    "none_argument": (
        ("def f(s):\n    return len(s)\n", ("s",), [(("ab",), 2), (("abc",), 3)]),
        0,
        "If `s` is None (NULL), return -1.",
        "def f(s):\n    if s is None:\n        return -1\n    return f_base(s)\n",
        [2, 3, -1],
    ),
    "empty_argument": (
        ("def f(xs):\n    return max(xs)\n", ("xs",), [(([1, 2],), 2), (([3],), 3)]),
        0,
        "If `xs` is empty, return -1.",
        "def f(xs):\n    if len(xs) == 0:\n        return -1\n    return f_base(xs)\n",
        [2, 3, -1],
    ),
    "false_when_long": (
        ("def f(xs):\n    return len(xs) > 0\n", ("xs",), [(([1],), True), (([1, 2],), True), (([1, 2, 3],), True)]),
        0,
        "If `xs` has more than 2 elements, return False.",
        "def f(xs):\n    if len(xs) > 2:\n        return False\n    return f_base(xs)\n",
        [True, True, False],
    ),
    "false_when_long_text": (
        ("def f(s):\n    return s.isalpha()\n", ("s",), [(("a",), True), (("ab",), True), (("abc",), True)]),
        0,
        "If `s` is longer than 2 characters, return False.",
        "def f(s):\n    if len(s) > 2:\n        return False\n    return f_base(s)\n",
        [True, True, False],
    ),
    "first_elements": (
        RANGE,
        None,
        "Return only the first 2 element(s) of the result.",
        "def f(n):\n    return f_base(n)[:2]\n",
        [[0], [0, 1], [0, 1]],
    ),
    "reversed_result": (
        RANGE,
        None,
        "Return the result in reverse order.",
        "def f(n):\n    return f_base(n)[::-1]\n",
        [[0], [1, 0], [2, 1, 0]],
    ),
    "upper_case_result": (
        ("def f(s):\n    return s + 'x'\n", ("s",), [(("a",), "ax"), (("b",), "bx")]),
        None,
        "Return the result in upper case.",
        "def f(s):\n    return f_base(s).upper()\n",
        ["AX", "BX"],
    ),
    "first_characters": (
        ("def f(s):\n    return s * 2\n", ("s",), [(("a",), "aa"), (("ab",), "abab"), (("abc",), "abcabc")]),
        None,
        "Return at most the first 4 characters of the result.",
        "def f(s):\n    return f_base(s)[:4]\n",
        ["aa", "abab", "abca"],
    ),
}


def test_every_template_has_a_test():
    assert sorted(CASES) == sorted(rules.BY_ID)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_template(rule_id):
    (code, params, cases), param, clause, wrapper, outputs = CASES[rule_id]
    state = state_of(code, params, cases)
    template = rules.BY_ID[rule_id]
    assert param in rules.applicable_params(template, state.signature)
    proposal = template_proposal(template, state, param)
    source = rules.rename_function(code, "f", "f_base").rstrip()
    assert proposal.clause == clause
    assert proposal.code == f"{source}\n\n\n# Rule 1: {clause}\n{wrapper}"
    new = realize(state, proposal, SandboxExecutor())
    assert [c.expected for c in new.cases] == outputs
    assert new.rules == (rule_id,) and new.clauses == (clause,)
    task = new.typed_task()
    assert task.subset == "mbpp_ile" and task.text == f"Write the function.\n\nAdditional requirements:\n1. {clause}"
    for dialect in ("oracle", "postgres"):
        assert f"Additional requirements:\n1. {clause}" in emit_artifacts(task, dialect).prompt


def test_a_result_rule_never_applies_to_a_nullable_result():
    task = typed_task(("n",), [((1,), 2), ((2,), None)])
    assert rules.applicable_params(rules.BY_ID["cap_result"], task.signature) == []


def test_no_constant_when_the_data_gives_none():
    state = state_of(*DOUBLE[:2], [((1,), 2)])  # one distinct output: no median to cap at
    assert template_proposal(rules.BY_ID["cap_result"], state, None) is None


def test_renaming_leaves_strings_and_other_names_alone():
    code = "def f(x):\n    s = 'f(x)'  # f\n    return f(x - 1) + ff(x) if x else len(s)\n"
    assert rules.rename_function(code, "f", "f_base") == (
        "def f_base(x):\n    s = 'f(x)'  # f\n    return f_base(x - 1) + ff(x) if x else len(s)\n"
    )
