"""Tagged JSON codec for the Python values found in benchmark tests.

Plain JSON loses tuples, sets, non-string dict keys and non-finite floats. Test
cases, sandbox results and release rows all go through this one codec so those
distinctions survive every hop:

- tuple  -> {"$tuple": [...]}
- set    -> {"$set": [...]} (elements sorted by their encoding, for determinism)
- dict   -> {"$dict": [[key, value], ...]} (insertion order kept)
- float  -> a JSON number, or {"$float": "inf" | "-inf" | "nan"}
- int, str, bool, None, list -> themselves (lists element-wise)
"""

from __future__ import annotations

import math  # all it imports: every sandbox child loads this module, and each import there is paid per child

_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class UnsupportedValue(ValueError):
    """A value outside the literal types the benchmark can represent."""


def encode(value: object) -> object:
    """Turn a Python value into its tagged-JSON form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        import json  # here, not at the top: see the import there

        items = [encode(v) for v in value]
        return {"$set": sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    raise UnsupportedValue(f"cannot encode a value of type {type(value).__name__}")


def decode(data: object) -> object:
    """Inverse of `encode`."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if "$tuple" in data:
            return tuple(decode(v) for v in data["$tuple"])
        if "$set" in data:
            return {decode(v) for v in data["$set"]}
        if "$dict" in data:
            return {decode(k): decode(v) for k, v in data["$dict"]}
        if "$float" in data:
            return _SPECIAL_FLOATS[data["$float"]]
        raise UnsupportedValue(f"unknown tagged object with keys {sorted(data)}")
    return data


def dumps(value: object) -> str:
    """Deterministic JSON text of a Python value."""
    import json

    return json.dumps(encode(value), sort_keys=True, ensure_ascii=False, allow_nan=False)


def loads(text: str) -> object:
    import json

    return decode(json.loads(text))
