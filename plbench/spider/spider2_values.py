"""Spider 2.0-Lite sample values: the JSON-export spellings of the schema descriptions' sample rows
(numbers as strings, timestamps with offsets, pandas `NaT`, numpy array reprs for nested BigQuery
values, `bytearray(b'..')` for Snowflake BINARY) turned into the Python value each family expects."""

from __future__ import annotations

import ast
import datetime as dt
import decimal
import json
import re

from plbench.normalize.typemap import is_warehouse

_FAILED = object()
_INT = re.compile(r"^[+-]?\d+$")
_ISO_T = re.compile(r"^\d{4}-\d{2}-\d{2}T")
_BYTEARRAY = re.compile(r"^bytearray\((b(['\"]).*\2)\)$", re.S)
_NULL_TEMPORAL = frozenset({"NaT", "NaN", "nan", "None"})  # pandas' missing date/time spellings
_STRING_LITERAL = re.compile(r"""('[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")""")
# A string literal (kept whole, so spaces inside it are never touched), or the blanks between two values.
_REPR_GAPS = re.compile(_STRING_LITERAL.pattern + r"""|(?<=[\w'")\]}])\s+(?=[\w'"(\[{-])""")
_NULL_NAMES = frozenset({"nan", "NaN", "inf", "NaT"})
_WRAPPERS = frozenset({"array", "Timestamp", "Decimal", "datetime64", "Timedelta"})  # what numpy/pandas reprs wrap


def _with_commas(text: str) -> str:
    """numpy prints arrays without commas (`[758 897   4]`, `[{..}\\n {..}]`): put them back."""
    return _REPR_GAPS.sub(lambda m: m.group(1) or ", ", text)


def _literal(node: ast.AST):
    """A literal expression's value, where `array([..], dtype=object)`, `Timestamp('..')` and
    `Decimal('..')` stand for their first argument and nan/inf/NaT for None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS and node.args:
        return _literal(node.args[0])
    if isinstance(node, ast.Name) and node.id in _NULL_NAMES:
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        return -value if isinstance(node.op, ast.USub) and value is not None else value
    raise ValueError(f"not a literal: {type(node).__name__}")


def _jsonable(value):
    """The value with non-finite floats as None (JSON has no NaN), and other scalars as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# The text between a repr's strings (each string stands there as a NUL) as JSON: numpy's missing commas
# put back, `array([..], dtype=..)` as its list, Python's constants as JSON's. A word inside a longer
# name leaves a letter beside the JSON it became, which json.loads refuses: replacing the words as plain
# text is as exact as matching whole names, and many times faster.
_GAPS_BETWEEN_VALUES = re.compile(r"(?<=[\w\0)\]}])\s+(?=[\w\0(\[{-])")
_ARRAY_DTYPE = re.compile(r",\s*dtype=\w+\)")
_PYTHON_WORDS_AS_JSON = (
    ("array(", ""),
    ("None", "null"),
    ("True", "true"),
    ("False", "false"),
    *((name, "null") for name in sorted(_NULL_NAMES)),
)


def _no_constant(name: str):
    raise ValueError(f"{name} is no Python literal")


def _json_string(literal: str) -> str:
    """A Python string literal as a JSON string."""
    if "\\" in literal:
        return json.dumps(ast.literal_eval(literal), ensure_ascii=False)
    return '"' + literal[1:-1].replace('"', '\\"') + '"'


def _repr_as_json(text: str):
    """The repr read as JSON, or _FAILED: its strings turned into JSON strings, the text between them
    rewritten as JSON (_PYTHON_WORDS_AS_JSON). ast took 11 s on ga360's 72 MB of
    nested samples, this about 2 s. What JSON would not read as ast does (tuples, sets, int keys,
    other wrappers, bytes, -nan, Infinity) fails here, and ast reads it."""
    if "\0" in text:
        return _FAILED
    pieces = _STRING_LITERAL.split(text)  # outside, string, outside, ..., outside
    outside = "\0".join(pieces[0::2])
    if "'" in outside or '"' in outside:  # a string left open
        return _FAILED
    outside = _ARRAY_DTYPE.sub("", _GAPS_BETWEEN_VALUES.sub(", ", outside))
    for word, json_word in _PYTHON_WORDS_AS_JSON:
        outside = outside.replace(word, json_word)
    pieces[0::2] = outside.split("\0")
    try:
        pieces[1::2] = map(_json_string, pieces[1::2])
        return json.loads("".join(pieces), parse_constant=_no_constant)
    except (SyntaxError, ValueError):
        return _FAILED


def python_repr_value(text: str):
    """A Python or numpy repr (as BigQuery sample rows stringify nested values) → the value in JSON's
    types, string keys (_jsonable; a number too large for a float stays an infinity), or _FAILED."""
    value = _repr_as_json(text)
    if value is not _FAILED:
        return value
    try:
        return _jsonable(_literal(ast.parse(_with_commas(text), mode="eval").body))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return _FAILED


# A JSON string (kept whole), or a number in exponent notation.
_JSON_EXPONENT = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|(-?\d+(?:\.\d+)?[eE][+-]?\d+)')
_EXPONENT_HINT = re.compile(r"\d[eE][+-]?\d")  # in every exponent number, and absent from most texts


def plain_numbers(text: str) -> str:
    """JSON text with exponent numbers written out (-9.08e+18 → -9080012388038386000), as jsonb prints
    them: otherwise the text and what jsonb gives back differ (float vs int) and the load checksum fails."""
    if not _EXPONENT_HINT.search(text):
        return text
    return _JSON_EXPONENT.sub(lambda m: m.group(1) or format(decimal.Decimal(m.group(2)), "f"), text)


def nested_json(value) -> tuple[str, bool]:
    """(JSON text, parsed) for a nested sample value: a dict/list, JSON text, or a Python/numpy repr.

    What parses as none of these is kept as a JSON string (parsed=False), so the column stays JSON.
    """
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = python_repr_value(value)
            if parsed is _FAILED:
                return json.dumps(value, ensure_ascii=False), False
    else:
        parsed = value
    return plain_numbers(_json_text(parsed)), True


def _json_text(value) -> str:
    """json.dumps of `_jsonable(value)`, without walking a value JSON already holds as it is."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # a NaN or infinity, or a type JSON has not
        return json.dumps(_jsonable(value), ensure_ascii=False, default=str)


def _timestamp(value):
    if not isinstance(value, str):
        return value
    text = value.strip()
    text = text[:-4] if text.endswith(" UTC") else text
    text = text.replace("T", " ", 1) if _ISO_T.match(text) else text
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return value
    # Keep the wall-clock time: BigQuery shows UTC (+00:00), Snowflake its session zone.
    return parsed.replace(tzinfo=None)


def _number(value, family: str):
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if family == "integer":
            return int(text) if _INT.match(text) else value
        if family == "float":
            return float(text)
        number = decimal.Decimal(text)
        return number if number.is_finite() else value
    except (ValueError, decimal.InvalidOperation):
        return value


def _binary(value):
    if isinstance(value, str) and (m := _BYTEARRAY.match(value.strip())):
        try:
            return ast.literal_eval(m.group(1))
        except (SyntaxError, ValueError):
            return value
    return value


def prepare_value(value, family: str, dialect: str):
    """A sample value as the Python value its family holds, or unchanged when it does not read as one.

    SQLite samples are left as they are (SQLite is dynamically typed and its values
    are already Python values); warehouse samples come as JSON-export text.
    """
    if value is None:
        return None
    if family in ("date", "timestamp", "time") and value in _NULL_TEMPORAL:
        return None
    if family == "timestamp":
        return _timestamp(value)
    if not is_warehouse(dialect):
        return value
    if family in ("integer", "decimal", "float"):
        return _number(value, family)
    if family == "binary":
        return _binary(value)
    if family == "json":
        return nested_json(value)[0]
    return value
