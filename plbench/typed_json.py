"""Typed values back from a database's JSON rendering (`to_jsonb`): the grader and the round trip read them so.

JSON has no tuples, sets or non-finite numbers, so the declared type decides: a record's fields `f1…`, a dict's
`(k, v)` pairs, a collection of collections' one-field wrapper (`items`), a variant's tag, and the words PostgreSQL
writes for non-finite floats.
"""

from __future__ import annotations

import math
from typing import Any

from plbench.dialects.base import VARIANT_FIELDS
from plbench.types import PyType

_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def decode(data: Any, t: PyType) -> Any:
    """The Python value of a to_jsonb() rendering of a value of type t."""
    if data is None:
        return None
    kind = t.kind
    if kind == "float":
        return _FLOAT_WORDS[data] if isinstance(data, str) else float(data)
    if kind in ("int", "str", "bool", "json"):
        return data
    if kind in ("list", "tuple_seq", "set"):
        items = [decode(x["items"] if t.elem.is_collection and x is not None else x, t.elem) for x in data]
        return tuple(items) if kind == "tuple_seq" else set(items) if kind == "set" else items
    if kind == "dict":
        return {decode(p["k"], t.args[0]): decode(p["v"], t.args[1]) for p in data}
    if kind == "record":
        return tuple(decode(data[f"f{i + 1}"], a) for i, a in enumerate(t.args))
    if kind == "variant":
        member = next(m for m in t.args if m.kind == data["tag"])
        return decode(data[VARIANT_FIELDS[member.kind]], member)
    raise ValueError(f"no decoder for {t.describe()}")
