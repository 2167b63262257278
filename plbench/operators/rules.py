"""The rule templates of the deterministic ILE proposer, as data, and how one becomes code.

A template adds one business rule to a Python reference: the current entry function is renamed
(`<entry>_base`, then `<entry>_round<k>`) and a new `<entry>` wraps it. Each row names the return
and parameter kinds it applies to, the requirement clause, the wrapper body, how its constant is
chosen from the current outputs and inputs, and which extra inputs exercise it.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from typing import Any

from plbench.mbpp.pytypes import Signature

NUMBER = ("int", "float")
SEQUENCE = ("list", "tuple_seq")
SIZED = ("list", "tuple_seq", "str")
DEFAULTS = {"int": -1, "float": -1.0, "str": "none", "bool": False}  # returned by the guard rules
LIMIT_NAMES = ("limit", "upper_limit", "cap_limit")


@dataclass(frozen=True)
class RuleTemplate:
    rule_id: str
    returns: tuple[str, ...]  # return kinds the rule applies to (never to a nullable return)
    clause: str  # the requirement text; {value} {param} {limit} filled in
    body: str  # the wrapper body; {call} is the call of the previous function
    value: str  # how {value} is chosen: see choose_value
    param_kinds: tuple[str, ...] = ()  # a rule about one parameter: the kinds it may have
    extra_inputs: str = ""  # "" | "param_none" | "param_empty" | "limit"


TEMPLATES: tuple[RuleTemplate, ...] = (
    RuleTemplate(
        "cap_result",
        NUMBER,
        "If the result is greater than {value}, return {value} instead.",
        "result = {call}\nif result > {value}:\n    return {value}\nreturn result",
        "lower_median_output",
    ),
    RuleTemplate(
        "floor_result",
        NUMBER,
        "If the result is less than {value}, return {value} instead.",
        "result = {call}\nif result < {value}:\n    return {value}\nreturn result",
        "upper_median_output",
    ),
    RuleTemplate("abs_result", NUMBER, "Return the absolute value of the result.", "return abs({call})", ""),
    RuleTemplate(
        "round_result",
        ("float",),
        "Round the result to the nearest integer (a half rounds to the even neighbour: 2.5 becomes 2) "
        "and return that integer.",
        "return round({call})",
        "",
    ),
    RuleTemplate(
        "threshold_parameter",
        NUMBER,
        "The function takes one more argument, `{limit}`, after the others: when the result is greater "
        "than `{limit}`, return `{limit}` instead.",
        "result = {call}\nif result > {limit}:\n    return {limit}\nreturn result",
        "",
        extra_inputs="limit",
    ),
    RuleTemplate(
        "none_argument",
        ("int", "float", "str", "bool"),
        "If `{param}` is None (NULL), return {value}.",
        "if {param} is None:\n    return {value}\nreturn {call}",
        "default_of_return",
        param_kinds=("int", "float", "str", "list", "tuple_seq", "dict", "set", "record"),
        extra_inputs="param_none",
    ),
    RuleTemplate(
        "empty_argument",
        ("int", "float", "str", "bool"),
        "If `{param}` is empty, return {value}.",
        "if len({param}) == 0:\n    return {value}\nreturn {call}",
        "default_of_return",
        param_kinds=SIZED,
        extra_inputs="param_empty",
    ),
    RuleTemplate(
        "false_when_long",
        ("bool",),
        "If `{param}` has more than {value} elements, return False.",
        "if len({param}) > {value}:\n    return False\nreturn {call}",
        "lower_median_length",
        param_kinds=SEQUENCE,
    ),
    RuleTemplate(
        "false_when_long_text",
        ("bool",),
        "If `{param}` is longer than {value} characters, return False.",
        "if len({param}) > {value}:\n    return False\nreturn {call}",
        "lower_median_length",
        param_kinds=("str",),
    ),
    RuleTemplate(
        "first_elements",
        SEQUENCE,
        "Return only the first {value} element(s) of the result.",
        "return {call}[:{value}]",
        "lower_median_output_length",
    ),
    RuleTemplate("reversed_result", SEQUENCE, "Return the result in reverse order.", "return {call}[::-1]", ""),
    RuleTemplate("upper_case_result", ("str",), "Return the result in upper case.", "return {call}.upper()", ""),
    RuleTemplate(
        "first_characters",
        ("str",),
        "Return at most the first {value} characters of the result.",
        "return {call}[:{value}]",
        "lower_median_output_length",
    ),
)
BY_ID = {t.rule_id: t for t in TEMPLATES}


def _lower_median(items: list) -> Any | None:
    distinct = sorted(set(items))
    return distinct[(len(distinct) - 1) // 2] if len(distinct) >= 2 else None


def _upper_median(items: list) -> Any | None:
    distinct = sorted(set(items))
    return distinct[len(distinct) // 2] if len(distinct) >= 2 else None


def nice(value: Any) -> Any:
    """Floats are written with two decimals in the requirement and the code."""
    return round(value, 2) if isinstance(value, float) else value


def choose_value(template: RuleTemplate, signature: Signature, args: list[tuple], outputs: list, param: int | None):
    """The template's constant for this task, or None when the task's data gives none."""
    how = template.value
    if how == "":
        return ""
    if how == "default_of_return":
        return DEFAULTS[signature.returns.kind]
    if how == "lower_median_output":
        return nice(_lower_median(outputs))
    if how == "upper_median_output":
        return nice(_upper_median(outputs))
    if how == "lower_median_output_length":
        return _lower_median([len(o) for o in outputs])
    if how == "lower_median_length":
        return _lower_median([len(a[param]) for a in args])
    raise ValueError(f"rule template {template.rule_id}: unknown value rule {how!r}")


def applicable_params(template: RuleTemplate, signature: Signature) -> list[int | None]:
    """Indexes of the parameters a parameter rule may be about; [None] for a result rule."""
    returns = signature.returns
    if returns.nullable or returns.kind not in template.returns:
        return []
    if not template.param_kinds:
        return [None]
    return [
        i
        for i, (_, t) in enumerate(signature.params)
        if t.kind in template.param_kinds and not t.nullable  # None has no length, and None is handled once
    ]


def rename_function(code: str, old: str, new: str) -> str:
    """Every NAME token `old` becomes `new` (the def and the recursive calls; strings untouched)."""
    tokens = [
        tok._replace(string=new) if tok.type == tokenize.NAME and tok.string == old else tok
        for tok in tokenize.generate_tokens(io.StringIO(code).readline)
    ]
    return tokenize.untokenize(tokens)


def wrapper(entry: str, previous: str, params: tuple[str, ...], old_params: tuple[str, ...], body: str) -> str:
    """`def entry(params)` whose body calls `previous(old_params)`, indented."""
    call = f"{previous}({', '.join(old_params)})"
    lines = body.replace("{call}", call).splitlines()
    return f"def {entry}({', '.join(params)}):\n" + "\n".join(f"    {line}" for line in lines) + "\n"


def limit_name(params: tuple[str, ...]) -> str:
    return next(n for n in LIMIT_NAMES if n not in params)


@dataclass(frozen=True)
class RuleText:
    """A template filled in for one task: clause, wrapper body, the new parameter list."""

    clause: str
    body: str
    params: tuple[str, ...]


def fill(template: RuleTemplate, params: tuple[str, ...], value: Any, param: int | None) -> RuleText:
    fields = {"value": repr(value), "param": params[param] if param is not None else "", "limit": ""}
    new_params = params
    if template.extra_inputs == "limit":
        fields["limit"] = limit_name(params)
        new_params = params + (fields["limit"],)
    body = template.body.replace("{call}", "\0")
    body = body.format(**fields).replace("\0", "{call}")
    return RuleText(template.clause.format(**fields), body, new_params)
