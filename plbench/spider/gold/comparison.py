"""Whether two query results are the same answer.

Values are normalized before comparing: Decimal/bool/int/float as numbers (equal within
FLOAT_REL_TOL relative, FLOAT_ABS_TOL absolute, by `plbench.compare.same`), dates and times as
ISO text, bytes as hex, and, in a column one side returns as numbers and the other as text,
numeric text as numbers.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from dataclasses import dataclass

from plbench.compare import Tolerance, same

FLOAT_REL_TOL = 1e-6  # SQLite and PostgreSQL sum/avg floats in different orders; numeric vs double
FLOAT_ABS_TOL = 1e-9  # for values near zero, where a relative tolerance means nothing


def _scalar(value):
    """One result value in a comparable form: numbers as int/float, dates as ISO text, bytes as hex.

    PostgreSQL returns Decimal for numeric and bool for boolean; SQLite returns int/float and 0/1;
    SQLite keeps dates as text.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and value.is_finite() else float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _as_number(value):
    """A string that holds a number, as that number (SQLite affinity may return either form)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


def _lenient_columns(source: list[tuple], target: list[tuple]) -> set[int]:
    """Columns where one side returns numbers and the other text: compared as numbers there."""

    def kinds(rows, i):
        return {type(r[i]) for r in rows if i < len(r) and r[i] is not None}

    width = max((len(r) for r in source + target), default=0)
    out = set()
    for i in range(width):
        a, b = kinds(source, i), kinds(target, i)
        if (str in a and b & {int, float}) or (str in b and a & {int, float}):
            out.add(i)
    return out


def _normalize_rows(rows: list[tuple], lenient: set[int]) -> list[tuple]:
    out = []
    for row in rows:
        values = tuple(_scalar(v) for v in row)
        out.append(tuple(_as_number(v) if i in lenient else v for i, v in enumerate(values)))
    return out


def _rows_equal(a: tuple, b: tuple, float_tol: float) -> bool:
    return same(a, b, Tolerance(FLOAT_ABS_TOL, float_tol))


def _exact_key(row: tuple) -> tuple:
    """A hashable key equal for equal rows; floats rounded so near-equal ones usually meet."""
    return tuple(
        (1, float(f"{v:.9g}")) if isinstance(v, float) else (1, v) if isinstance(v, int) else (0, v) for v in row
    )


@dataclass(frozen=True)
class Comparison:
    equal: bool
    diff: str = ""


_MAX_PAIRINGS = 4_000_000  # rows left after exact matching, paired within tolerance one by one


def _unmatched(source: list[tuple], target: list[tuple], float_tol: float) -> tuple[list, list]:
    """Rows of each side with no partner on the other (exact keys first, then within tolerance)."""
    left = Counter(_exact_key(r) for r in source)
    right = Counter(_exact_key(r) for r in target)
    by_key = {_exact_key(r): r for r in source + target}
    only_source = [by_key[k] for k, n in (left - right).items() for _ in range(n)]
    only_target = [by_key[k] for k, n in (right - left).items() for _ in range(n)]
    if len(only_source) * len(only_target) > _MAX_PAIRINGS:
        return only_source, only_target  # too many to pair one by one: already far apart
    still = []
    for row in only_source:
        partner = next((i for i, t in enumerate(only_target) if _rows_equal(row, t, float_tol)), None)
        if partner is None:
            still.append(row)
        else:
            only_target.pop(partner)
    return still, only_target


def _show(rows: list[tuple], limit: int = 3) -> str:
    text = ", ".join(repr(r) for r in rows[:limit])
    return text + (f" (+{len(rows) - limit} more)" if len(rows) > limit else "")


def compare(
    source_rows: list[tuple], target_rows: list[tuple], ordered: bool, float_tol: float = FLOAT_REL_TOL
) -> Comparison:
    """Whether two results are the same answer: the same multiset of rows (the same sequence when
    `ordered`), values normalized by `_scalar`, numbers equal within `float_tol` (relative)."""
    lenient = _lenient_columns(source_rows, target_rows)
    src, tgt = _normalize_rows(source_rows, lenient), _normalize_rows(target_rows, lenient)
    only_src, only_tgt = _unmatched(src, tgt, float_tol)
    if only_src or only_tgt:
        return Comparison(
            False,
            (f"{len(src)} vs {len(tgt)} rows; only in source: {_show(only_src)}; only in target: {_show(only_tgt)}")[
                :1000
            ],
        )
    if ordered:
        for i, (a, b) in enumerate(zip(src, tgt)):
            if not _rows_equal(a, b, float_tol):
                return Comparison(False, f"same rows, different order: row {i} is {a!r} vs {b!r}"[:1000])
    return Comparison(True)
