"""Inference of one signature per task over the type model of `plbench.types`.

A `PyType` is a small immutable tree. Inference walks every test value of a
task and unifies the types it finds; a task whose values cannot be unified is
rejected with a specific reason code (`TypingError.reason_code`).

Unification rules (each is a rule of Python equality the harness must keep):
- int with float → float (Python: 1 == 1.0);
- None with T → nullable T (SQL values are nullable; the record says so);
- an empty collection (element type unknown) with a typed one → the typed one;
- scalars of different kinds (bool and int included: True == 1 in Python, but a task that
  mixes them means different things) → a tagged variant, wherever they meet;
- tuples of one fixed length with per-position types → a record (object/composite);
  tuples whose length varies, with one element type → a homogeneous collection;
- a value that is a collection in one case and a scalar (or another shape) in another
  → a JSON document (jsonb / CLOB holding JSON), when JSON can hold both: no sets,
  string dict keys; otherwise rejected (`inconsistent_types`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plbench.types import BOOL, FLOAT, INT, JSON, NONE, SCALARS, STR, UNKNOWN, PyType


class TypingError(ValueError):
    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


def type_of(value: Any) -> PyType:
    """The type of one literal value, before unification across cases."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STR
    if isinstance(value, list):
        return PyType.list_of(_elements_type(value, "list element"))
    if isinstance(value, (set, frozenset)):
        return PyType("set", (_unify_all([type_of(v) for v in value], "set element"),))
    if isinstance(value, dict):
        keys = _unify_all([type_of(k) for k in value], "dict key")
        return PyType("dict", (keys, _unify_all([type_of(v) for v in value.values()], "dict value")))
    if isinstance(value, tuple):
        return PyType("tuple", tuple(type_of(v) for v in value))
    raise TypingError("unsupported_value_type", f"values of type {type(value).__name__} are not supported")


_FLAT = {
    frozenset({int}): INT,
    frozenset({float}): FLOAT,
    frozenset({int, float}): FLOAT,
    frozenset({str}): STR,
    frozenset({bool}): BOOL,
}


def _elements_type(values: list, where: str) -> PyType:
    """The unified type of a list's elements; flat lists (most big inputs) skip per-element unification."""
    flat = _FLAT.get(frozenset(map(type, values)))
    return flat if flat is not None else _unify_all([type_of(v) for v in values], where)


def _unify_all(types: list[PyType], where: str) -> PyType:
    result = UNKNOWN
    for t in types:
        result = unify(result, t, where)
    return result


def unify(a: PyType, b: PyType, where: str = "value") -> PyType:
    """The least type that holds both a and b, or TypingError."""
    if a.kind == "unknown":
        return b
    if b.kind == "unknown":
        return a
    nullable = a.nullable or b.nullable
    if a.kind == "none":
        return b.with_nullable()
    if b.kind == "none":
        return a.with_nullable()
    core = _unify_core(a.with_nullable(False), b.with_nullable(False), where)
    return core.with_nullable(nullable)


def _unify_core(a: PyType, b: PyType, where: str) -> PyType:
    if a == b:
        return a
    if "json" in (a.kind, b.kind):
        return _json_or_fail(a, b, where)
    if {a.kind, b.kind} == {"int", "float"}:
        return FLOAT
    if a.kind == b.kind and a.kind in ("list", "set"):
        return PyType(a.kind, (unify(a.elem, b.elem, where + " element"),))
    if a.kind == b.kind == "dict":
        return PyType("dict", (unify(a.args[0], b.args[0], "dict key"), unify(a.args[1], b.args[1], "dict value")))
    if {a.kind, b.kind} & {"tuple", "tuple_seq", "record"}:
        return _unify_tuples(a, b, where)
    if {a.kind, b.kind} == {"set", "dict"} and _is_empty_dict(a if a.kind == "dict" else b):
        # `{}` is an empty dict in Python, but tests write it for an empty set.
        return a if a.kind == "set" else b
    if a.kind in SCALARS + ("variant",) and b.kind in SCALARS + ("variant",):
        return _variant(a, b, where)
    return _json_or_fail(a, b, where)


def _json_able(t: PyType) -> bool:
    """Whether JSON holds every value of t: no sets, string dict keys (JSON arrays stand for tuples)."""
    return all(x.kind != "set" and (x.kind != "dict" or x.args[0].kind in ("str", "unknown")) for x in t.walk())


def _json_or_fail(a: PyType, b: PyType, where: str) -> PyType:
    """A value that is a collection in one case and something else in another is a JSON document."""
    if _json_able(a) and _json_able(b):
        return JSON
    raise TypingError("inconsistent_types", f"{where}: {a.describe()} and {b.describe()} do not unify")


def _unify_tuples(a: PyType, b: PyType, where: str) -> PyType:
    """Tuples stay per-position while their lengths agree; a tuple meets a list as a list."""
    if a.kind in ("tuple", "record") and b.kind in ("tuple", "record") and len(a.args) == len(b.args):
        return PyType(
            a.kind if a.kind == b.kind else "record",
            tuple(unify(x, y, f"{where} position {i}") for i, (x, y) in enumerate(zip(a.args, b.args))),
        )
    if a.kind == "tuple" and b.kind == "tuple":
        # Different lengths: only a homogeneous sequence can hold both.
        return PyType("tuple_seq", (_unify_all(list(a.args) + list(b.args), where + " element"),))
    # Once one side is a sequence of mixed scalars, the other may mix them too.
    mixed = any(t.kind == "tuple_seq" and t.elem.kind == "variant" for t in (a, b))
    seq_a, seq_b = _as_sequence(a, mixed), _as_sequence(b, mixed)
    if seq_a is not None and seq_b is not None:
        return PyType("tuple_seq", (unify(seq_a, seq_b, where + " element"),))
    return _json_or_fail(a, b, where)


def _is_empty_dict(t: PyType) -> bool:
    return t.kind == "dict" and all(x.kind == "unknown" for x in t.args)


def _as_sequence(t: PyType, allow_mixed: bool = False) -> PyType | None:
    if t.kind == "tuple_seq":
        return t.elem
    if t.kind == "tuple":
        try:
            elem = _unify_all(list(t.args), "tuple element")
        except TypingError:
            return None
        # Positions of different scalar kinds make a record, not a variant sequence.
        if (
            not allow_mixed
            and any(x.kind == "variant" for x in elem.walk())
            and not any(x.kind == "variant" for a in t.args for x in a.walk())
        ):
            return None
        return elem
    return None


def _variant(a: PyType, b: PyType, where: str) -> PyType:
    members = {m for t in (a, b) for m in (t.args if t.kind == "variant" else (t,))}
    if FLOAT in members:
        members.discard(INT)  # int and float unify inside a variant too
    if len(members) == 1:
        return members.pop()
    return PyType("variant", tuple(sorted(members, key=lambda m: SCALARS.index(m.kind))))


def finalize(t: PyType, where: str) -> PyType:
    """Resolve inference-only kinds into the kinds the emitters know.

    A tuple whose positions share one type is a homogeneous collection
    (tuple_seq, ordered like a list); a tuple with positions of different
    types is a record (object / composite type). Unknown element types (only
    empty collections were seen) become int; the caller records that.
    """
    if t.kind == "unknown":
        return INT.with_nullable(t.nullable)
    if t.kind == "none":
        raise TypingError("untyped_none", f"{where}: only None was ever seen, the type cannot be inferred")
    if t.kind == "tuple":
        if not t.args:
            return PyType("tuple_seq", (INT,), t.nullable)
        homogeneous = _as_sequence(t)
        if homogeneous is not None:
            return PyType("tuple_seq", (finalize(homogeneous, where),), t.nullable)
        return PyType("record", tuple(finalize(x, where) for x in t.args), t.nullable)
    if t.kind == "variant" or not t.args:
        return t
    return PyType(t.kind, tuple(finalize(x, where) for x in t.args), t.nullable)


@dataclass(frozen=True)
class Signature:
    params: tuple[tuple[str, PyType], ...]  # Python parameter names, in order
    returns: PyType

    def all_types(self) -> list[PyType]:
        return [t for _, t in self.params] + [self.returns]


def infer_signature(param_names: list[str], cases: list[tuple[tuple, Any]]) -> Signature:
    """One signature consistent with every (args, expected) case."""
    if not cases:
        raise TypingError("no_test_cases", "the task has no usable test case")
    arity = {len(args) for args, _ in cases}
    if len(arity) != 1:
        raise TypingError("inconsistent_arity", f"calls use {sorted(arity)} arguments")
    (n,) = arity
    if len(param_names) != n:
        raise TypingError("inconsistent_arity", f"{n} arguments passed but {len(param_names)} parameters named")
    param_types = [_unify_all([type_of(args[i]) for args, _ in cases], f"parameter {param_names[i]}") for i in range(n)]
    return_type = _unify_all([type_of(expected) for _, expected in cases], "return value")
    if return_type.kind == "none":
        raise TypingError("returns_none", "every case expects None: nothing observable to test")
    return Signature(
        tuple((name, finalize(t, f"parameter {name}")) for name, t in zip(param_names, param_types)),
        finalize(return_type, "return value"),
    )


def conforms(value: Any, t: PyType) -> bool:
    """Whether a value can be represented by type t (used to keep or drop extra cases)."""
    if value is None:
        return t.nullable or t.kind == "variant"
    kind = t.kind
    if kind == "variant":
        return any(conforms(value, m) for m in t.args)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind in ("int", "bool", "str"):
        return type(value) is {"int": int, "bool": bool, "str": str}[kind]
    if kind in ("list", "tuple_seq"):
        return isinstance(value, list if kind == "list" else tuple) and all(conforms(v, t.elem) for v in value)
    if kind == "set":
        return isinstance(value, (set, frozenset)) and all(conforms(v, t.elem) for v in value)
    if kind == "dict":
        return isinstance(value, dict) and all(
            conforms(k, t.args[0]) and conforms(v, t.args[1]) for k, v in value.items()
        )
    if kind == "record":
        return (
            isinstance(value, tuple)
            and len(value) == len(t.args)
            and all(conforms(v, a) for v, a in zip(value, t.args))
        )
    if kind == "json":
        try:
            return _json_able(type_of(value))
        except TypingError:
            return False
    return False
