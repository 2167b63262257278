"""The PyType of a release row's `python_type` text: the inverse of `PyType.describe()`."""

from __future__ import annotations

from plbench.types import PyType

_NULLABLE = " | None"


def _split_top(text: str) -> list[str]:
    """Comma-separated parts of a type list, commas inside brackets left alone."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def parse_type(text: str) -> PyType:
    """`list[tuple[int, str]] | None` -> PyType; a spelling describe() never writes is a ValueError."""
    text = text.strip()
    if text.endswith(_NULLABLE):  # the outermost type's: inner ones end inside brackets
        return parse_type(text[: -len(_NULLABLE)]).with_nullable()
    if text == "None":
        return PyType("none", nullable=True)
    if text == "JSON":
        return PyType("json")
    if text in ("int", "float", "str", "bool"):
        return PyType(text)
    head, bracket, rest = text.partition("[")
    if not bracket or not rest.endswith("]"):
        raise ValueError(f"not a python_type spelling: {text!r}")
    args = [parse_type(p) for p in _split_top(rest[:-1]) if p != "..."]
    if head == "tuple" and rest[:-1].rstrip().endswith(", ..."):
        return PyType("tuple_seq", tuple(args))
    kinds = {"list": "list", "set": "set", "dict": "dict", "tuple": "record", "Union": "variant"}
    if head not in kinds:
        raise ValueError(f"not a python_type spelling: {text!r}")
    return PyType(kinds[head], tuple(args))
