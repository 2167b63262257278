"""Mutants of a task's expected outputs: wrong answers the harness must reject.

Each mutant is a list of outputs, one per case, that a replay function returns
instead of the expected ones. A harness that lets a mutant through cannot tell a
wrong function from a right one; such a task is rejected (`harness_too_weak`).

- `null`:       every case returns NULL;
- `other_case`: case i returns the expected output of the next case with a different
                output (or a perturbed value when all outputs are equal);
- `reorder`:    ordered collections come back reversed (rotated where reversing changes
                nothing); other results, or collections that no reordering changes, are
                perturbed instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plbench.dialects.base import variant_member
from plbench.mbpp.artifacts import TypedTask
from plbench.types import PyType
from plbench.values import dumps


@dataclass(frozen=True)
class Mutant:
    name: str
    outputs: list[Any]


def default_value(t: PyType) -> Any:
    """A simple non-NULL value of a type."""
    kind = t.kind
    if kind == "variant":
        return default_value(t.args[0])
    return {
        "int": 0,
        "float": 0.0,
        "str": "x",
        "bool": False,
        "list": [],
        "tuple_seq": (),
        "set": set(),
        "dict": {},
        "json": 0,
    }.get(kind, tuple(default_value(a) for a in t.args) if kind == "record" else None)


def perturb(value: Any, t: PyType) -> Any:
    """A value of type t that differs from `value` beyond any comparison tolerance."""
    if value is None:
        return default_value(t)
    kind = t.kind
    if kind == "variant":
        return perturb(value, variant_member(value, t))
    if kind == "bool":
        return not value
    if kind == "int":
        return value + 1
    if kind == "float":
        return value + 1.0 + abs(value)
    if kind == "str":
        return value + "x"
    if kind in ("list", "tuple_seq"):
        changed = list(value[:-1]) if value else [default_value(t.elem)]
        return tuple(changed) if kind == "tuple_seq" else changed
    if kind == "set":
        extra = default_value(t.elem)
        # the first member in canonical order is dropped: a set's own order follows the process's hash seed
        return set(sorted(value, key=dumps)[1:]) if extra in value else set(value) | {extra}
    if kind == "dict":
        if not value:
            return {default_value(t.args[0]): default_value(t.args[1])}
        first = next(iter(value))
        return {**value, first: perturb(value[first], t.args[1])}
    if kind == "record":
        return (perturb(value[0], t.args[0]), *value[1:])
    if kind == "json":
        return _perturb_json(value)
    raise ValueError(f"cannot perturb a value of type {t.describe()}")


def _perturb_json(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, (list, tuple)):
        return list(value[:-1]) if value else [0]
    if isinstance(value, dict):
        return {**value, "plbench_mutant": 0}
    return 0


def _other_case(expected: list[Any], t: PyType) -> list[Any]:
    keys = [dumps(v) for v in expected]
    outputs = []
    for i, key in enumerate(keys):
        j = next((j % len(keys) for j in range(i + 1, i + len(keys)) if keys[j % len(keys)] != key), None)
        outputs.append(expected[j] if j is not None else perturb(expected[i], t))
    return outputs


def _reordered(value: Any) -> Any:
    if value is None or len(value) < 2:
        return value
    items = list(value)
    changed = items[::-1] if items[::-1] != items else items[1:] + items[:1]
    return tuple(changed) if isinstance(value, tuple) else changed


def _reorder(expected: list[Any], t: PyType) -> list[Any]:
    if t.is_ordered:
        outputs = [_reordered(v) for v in expected]
        if any(dumps(o) != dumps(e) for o, e in zip(outputs, expected)):
            return outputs
    return [perturb(v, t) for v in expected]


def mutants(task: TypedTask) -> list[Mutant]:
    expected = [case.expected for case in task.cases]
    returns = task.signature.returns
    return [
        Mutant("null", [None] * len(expected)),
        Mutant("other_case", _other_case(expected, returns)),
        Mutant("reorder" if returns.is_ordered else "perturb", _reorder(expected, returns)),
    ]
