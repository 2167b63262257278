"""MBPP-style problems for the implementation cross-check, one or more per type rule of the converter,
built into a small release by the real stages (ingest, extraction, typing, emission, PostgreSQL replay,
release rows). Their hand-written PL/pgSQL solutions are `tests/data/crosscheck_solutions.jsonl`.

The problems are written here, not taken from the raw mirror, so the tests need no download and
every type rule is covered on purpose: the comment above each problem names the rule it exercises.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench.config import BuildConfig
from plbench.engines.base import Engine
from plbench.mbpp.stages import ReplayReport, build_tasks, extract_test_cases, infer_signatures, ingest
from plbench.raw_sources import SourceFile
from plbench.sandbox import SandboxLimits
from plbench.subsets.mbpp import task_rows
from plbench.taskrow import TASK_SCHEMA, task_records
from plbench.validation.replay import validate_task

SOLUTIONS = Path(__file__).with_name("data") / "crosscheck_solutions.jsonl"


def _p(task_id: int, text: str, code: str, *asserts: str) -> dict:
    return {
        "task_id": task_id,
        "text": text,
        "code": code,
        "test_list": list(asserts),
        "test_setup_code": "",
        "challenge_test_list": [],
    }


PROBLEMS = [
    # int -> int (bigint)
    _p(
        101,
        "Sum the digits of a non-negative integer.",
        "def sum_digits(n):\n    return sum(int(c) for c in str(n))",
        "assert sum_digits(345) == 12",
        "assert sum_digits(0) == 0",
        "assert sum_digits(9999) == 36",
    ),
    # ints beyond 64 bits -> numeric
    _p(
        102,
        "Factorial of n.",
        "def factorial(n):\n    r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
        "assert factorial(0) == 1",
        "assert factorial(5) == 120",
        "assert factorial(25) == 15511210043330985984000000",
    ),
    # float result with the default tolerance
    _p(
        103,
        "Mean of a list of numbers.",
        "def mean(xs):\n    return sum(xs) / len(xs)",
        "assert mean([1, 2, 3, 4]) == 2.5",
        "assert mean([1.5]) == 1.5",
        "assert mean([0.1, 0.2]) == 0.15",
    ),
    # float result with math.isclose tolerances
    _p(
        104,
        "Area of a circle of radius r.",
        "import math\ndef circle_area(r):\n    return math.pi * r * r",
        "assert math.isclose(circle_area(2), 12.566, rel_tol=0.001)",
        "assert math.isclose(circle_area(10), 314.159, rel_tol=0.001)",
    ),
    # str -> str
    _p(
        105,
        "Reverse the order of the words of a sentence.",
        "def reverse_words(s):\n    return ' '.join(reversed(s.split()))",
        "assert reverse_words('hello big world') == 'world big hello'",
        "assert reverse_words('one') == 'one'",
        "assert reverse_words('') == ''",
    ),
    # str -> bool (plain, bare and negated asserts)
    _p(
        106,
        "Whether a string is a palindrome.",
        "def is_palindrome(s):\n    return s == s[::-1]",
        "assert is_palindrome('abba') == True",
        "assert is_palindrome('racecar')",
        "assert not is_palindrome('ab')",
    ),
    # list[int] -> list[int]
    _p(
        107,
        "Remove duplicates from a list, keeping the first occurrence of each.",
        "def dedupe(xs):\n    out = []\n    for x in xs:\n        if x not in out:\n            out.append(x)\n"
        "    return out",
        "assert dedupe([1, 2, 1, 3, 2]) == [1, 2, 3]",
        "assert dedupe([]) == []",
        "assert dedupe([5, 5]) == [5]",
    ),
    # list[str], int -> list[str]
    _p(
        108,
        "Words longer than n characters.",
        "def long_words(n, words):\n    return [w for w in words if len(w) > n]",
        "assert long_words(3, ['python', 'is', 'fun', 'always']) == ['python', 'always']",
        "assert long_words(10, ['a']) == []",
    ),
    # nested list[list[int]] -> nested list (one-field wrapper composite)
    _p(
        109,
        "Transpose a matrix given as a list of rows.",
        "def transpose(m):\n    return [list(r) for r in zip(*m)]",
        "assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]",
        "assert transpose([[7]]) == [[7]]",
    ),
    # list[int] -> tuple of mixed types (composite record)
    _p(
        110,
        "The largest element of a list and a label saying whether it is even.",
        "def max_with_parity(xs):\n    m = max(xs)\n    return (m, 'even' if m % 2 == 0 else 'odd')",
        "assert max_with_parity([3, 8, 1]) == (8, 'even')",
        "assert max_with_parity([7]) == (7, 'odd')",
    ),
    # homogeneous tuples -> tuple (array)
    _p(
        111,
        "Add two tuples element by element.",
        "def add_tuples(a, b):\n    return tuple(x + y for x, y in zip(a, b))",
        "assert add_tuples((1, 2, 3), (4, 5, 6)) == (5, 7, 9)",
        "assert add_tuples((0,), (-1,)) == (-1,)",
    ),
    # set comparison
    _p(
        112,
        "The elements two lists share.",
        "def common(a, b):\n    return list(set(a) & set(b))",
        "assert set(common([1, 2, 3], [3, 2, 9])) == set([2, 3])",
        "assert set(common([1], [2])) == set([])",
    ),
    # set literal result
    _p(
        113,
        "The distinct characters of a string, as a set.",
        "def distinct_chars(s):\n    return set(s)",
        "assert distinct_chars('abca') == {'a', 'b', 'c'}",
        "assert distinct_chars('zz') == {'z'}",
    ),
    # dict[str, int] (array of (k, v) composites, compared order-free)
    _p(
        114,
        "Count the occurrences of each character of a string.",
        "def char_count(s):\n    d = {}\n    for c in s:\n        d[c] = d.get(c, 0) + 1\n    return d",
        "assert char_count('hello') == {'h': 1, 'e': 1, 'l': 2, 'o': 1}",
        "assert char_count('') == {}",
    ),
    # Optional[int]: None in one case
    _p(
        115,
        "The first even number of a list, or None.",
        "def first_even(xs):\n    for x in xs:\n        if x % 2 == 0:\n            return x\n    return None",
        "assert first_even([1, 3, 4, 6]) == 4",
        "assert first_even([1, 3]) == None",
        "assert first_even([2]) == 2",
    ),
    # mixed scalar kinds -> tagged variant
    _p(
        116,
        "Divide a by b; return the string 'undefined' when b is zero.",
        "def safe_div(a, b):\n    return 'undefined' if b == 0 else a / b",
        "assert safe_div(6, 3) == 2.0",
        "assert safe_div(1, 0) == 'undefined'",
        "assert safe_div(1, 4) == 0.25",
    ),
    # mixed shapes -> jsonb argument
    _p(
        117,
        "Count the integers in an arbitrarily nested list.",
        "def count_leaves(xs):\n    return sum(count_leaves(x) if isinstance(x, list) else 1 for x in xs)",
        "assert count_leaves([1, [2, 3], [4, [5]]]) == 5",
        "assert count_leaves([[]]) == 0",
        "assert count_leaves([7]) == 1",
    ),
    # list of tuples -> list of composites
    _p(
        118,
        "Pair each word with its length.",
        "def word_lengths(words):\n    return [(w, len(w)) for w in words]",
        "assert word_lengths(['ab', 'c']) == [('ab', 2), ('c', 1)]",
        "assert word_lengths([]) == []",
    ),
    # dict with list values
    _p(
        119,
        "Group words by their length.",
        "def group_by_length(words):\n    d = {}\n    for w in words:\n        d.setdefault(len(w), []).append(w)\n"
        "    return d",
        "assert group_by_length(['a', 'bb', 'cc']) == {1: ['a'], 2: ['bb', 'cc']}",
        "assert group_by_length(['xyz']) == {3: ['xyz']}",
    ),
    # float arguments, bool result
    _p(
        120,
        "Whether three sides form a right triangle (to within 1e-9).",
        "def is_right(a, b, c):\n    s = sorted([a, b, c])\n    return abs(s[0] ** 2 + s[1] ** 2 - s[2] ** 2) < 1e-9",
        "assert is_right(3.0, 4.0, 5.0) == True",
        "assert is_right(1.0, 1.0, 1.5) == False",
        "assert is_right(5.0, 12.0, 13.0) == True",
    ),
    # mixed shapes in the result -> jsonb elements
    _p(
        121,
        "Reverse a nested list at every level.",
        "def deep_reverse(xs):\n    return [deep_reverse(x) if isinstance(x, list) else x for x in reversed(xs)]",
        "assert deep_reverse([1, [2, 3]]) == [[3, 2], 1]",
        "assert deep_reverse([[4, [5, 6]], 7]) == [7, [[6, 5], 4]]",
    ),
    # list[float] result, element-wise tolerance
    _p(
        122,
        "Each number's share of the total.",
        "def shares(xs):\n    t = sum(xs)\n    return [x / t for x in xs]",
        "assert shares([1, 3]) == [0.25, 0.75]",
        "assert shares([1, 1, 2]) == [0.25, 0.25, 0.5]",
        "assert shares([1, 2]) == [0.3333333333333333, 0.6666666666666666]",
    ),
]


def write_problems(root: Path) -> dict:
    """The problems as an MBPP raw file (with the sanitized companion), and a catalog matching them."""
    files = {
        "mbpp/mbpp.jsonl": "".join(json.dumps(p) + "\n" for p in PROBLEMS),
        "mbpp/sanitized-mbpp.json": json.dumps([]),
    }
    sources = []
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        sha = hashlib.sha256(text.encode()).hexdigest()
        sources.append(SourceFile("mbpp", rel, f"http://127.0.0.1:9/{rel}", sha, "test"))
    return {"mbpp": tuple(sources)}


def build_release(root: Path, engine: Engine) -> Path:
    """`root/release/tasks.parquet` holding the PostgreSQL rows of every problem, replay-validated."""
    config = BuildConfig(
        raw_dir=root / "raw",
        cache_dir=root / "cache",
        catalog=write_problems(root / "raw"),
        subsets=("mbpp",),
        sandbox=SandboxLimits(cpu_seconds=5, wall_seconds=15, case_seconds=2),
    )
    ingested = ingest(config, "mbpp")
    extracted = extract_test_cases([ingested], config)
    typed = infer_signatures(extracted, [ingested])
    built = build_tasks(typed)
    artifacts = [a for a in built.items if a.dialect == "postgres"]
    dropped = ingested.rejections + extracted.rejections + typed.rejections + built.rejections
    if dropped or len(artifacts) != len(PROBLEMS):  # every problem and every case is meant to convert
        raise AssertionError(f"fixture problems did not all convert: {len(artifacts)} of {len(PROBLEMS)}, {dropped}")
    replay = ReplayReport(
        "postgres", True, engine=engine.version(), results=[validate_task(engine, a.task) for a in artifacts]
    )
    reference = {(p.subset, p.source_id): p.reference_code for p in ingested.problems}
    rows, rejected = task_rows(artifacts, {"postgres": replay}, reference, {"mbpp": "0" * 64})
    if rejected:
        raise AssertionError(f"fixture tasks failed replay: {rejected}")
    out = root / "release"
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(task_records([r.with_(build_id="fixture") for r in rows]), schema=TASK_SCHEMA),
        out / "tasks.parquet",
    )
    return out
