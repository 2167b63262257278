"""Implementation cross-check on a real PostgreSQL: hand-written PL/pgSQL solutions of MBPP-style problems
(tests/crosscheck_fixtures.py) against their Python references run in the sandbox."""

import json
import math

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main
from plbench.engines.postgres import PostgresEngine
from plbench.evaluate import Candidate, read_solutions, read_tasks
from plbench.validation.crosscheck import Rules, crosscheck, extract_code, outputs_agree, summarize
from tests.conftest import PG_DATA_DIR
from tests.crosscheck_fixtures import PROBLEMS, SOLUTIONS, build_release

LABELS = [json.loads(line) for line in SOLUTIONS.read_text().splitlines()]
CORRECT = [i for i, row in enumerate(LABELS) if row["expect"] == "correct"]
WRONG = [i for i, row in enumerate(LABELS) if row["expect"] == "wrong"]


@pytest.fixture(scope="module")
def engine(pg_engine):
    """A 1 s statement timeout so the looping candidate is cut short."""
    fast = PostgresEngine.start(pg_engine._dsn, PG_DATA_DIR, statement_timeout_s=1.0)
    yield fast
    fast.close()


@pytest.fixture(scope="module")
def release(tmp_path_factory, pg_engine):
    return build_release(tmp_path_factory.mktemp("crosscheck"), pg_engine)


@pytest.fixture(scope="module")
def checked(release, engine):
    """Comparison rows of every fixture solution, correct and wrong."""
    return crosscheck(read_tasks(release), read_solutions(SOLUTIONS), {"postgres": engine})


def _by_candidate(rows):
    out = {}
    for row in rows:
        out.setdefault(row["candidate"], []).append(row)
    return out


def test_the_fixture_covers_every_type_rule(release):
    tasks = read_tasks(release).values()
    sql_types = {p["sql_type"] for t in tasks for p in json.loads(t["signature"])["params"]}
    sql_types |= {json.loads(t["signature"])["returns"]["sql_type"] for t in tasks}
    py_types = " ".join(p["python_type"] for t in tasks for p in json.loads(t["signature"])["params"])
    py_types += " " + " ".join(json.loads(t["signature"])["returns"]["python_type"] for t in tasks)
    assert {
        "bigint",
        "numeric",
        "double precision",
        "text",
        "boolean",
        "bigint[]",
        "text[]",
        "jsonb[]",
        "double precision[]",
        "plb_list_i8[]",
        "plb_kv_txt_i8[]",
        "plb_rec2_i8_txt",
    } <= sql_types
    for rule in (
        "tuple[int, ...]",
        "set[int]",
        "set[str]",
        "dict[int, list[str]]",
        "int | None",
        "Union[float, str]",
        "list[tuple[str, int]]",
        "JSON",
    ):
        assert rule in py_types, rule
    assert any(json.loads(t["comparison"])["unordered"] for t in tasks)
    assert len(tasks) == len(PROBLEMS)
    assert len({LABELS[i]["task_id"] for i in CORRECT}) >= 15 and len(WRONG) >= 3


def test_correct_solutions_agree_on_every_case(checked):
    mine = [r for r in checked if r["candidate"] in CORRECT]
    assert len(_by_candidate(mine)) == len(CORRECT)
    assert all(r["conclusive"] and r["agree"] and r["candidate_passes"] for r in mine)
    figures = summarize(mine)["mbpp/postgres"]
    for level in ("output_level", "output_level_conclusive", "pass_fail_level", "pass_fail_level_conclusive"):
        assert figures[level]["rate"] == 1.0, level
    assert figures["inconclusive_cases_by_cause"] == {} and figures["disagreements"] == []


@pytest.mark.parametrize(
    "task_id, cause",
    [
        ("mbpp/101", None),
        ("mbpp/103", None),
        ("mbpp/104", None),
        ("mbpp/112", None),
        ("mbpp/114", None),
        ("mbpp/110", "candidate_compile_error"),
        ("mbpp/107", "candidate_timeout"),
        ("mbpp/115", "candidate_runtime_error"),
    ],
)
def test_each_wrong_solution_is_detected_with_its_cause(checked, task_id, cause):
    (index,) = [i for i in WRONG if LABELS[i]["task_id"] == task_id]
    cases = _by_candidate(checked)[index]
    assert all(r["reference_passes"] for r in cases)  # the Python reference is right ...
    assert not all(r["candidate_passes"] for r in cases)  # ... and the candidate is caught
    assert {r["cause"] for r in cases if not r["candidate_passes"]} == {cause}
    if cause is None:  # a wrong answer is a conclusive disagreement
        assert any(r["conclusive"] and not r["agree"] for r in cases)


def test_agreement_figures_over_the_whole_fixture(checked):
    figures = summarize(checked)["mbpp/postgres"]
    assert figures["candidates"] == len(LABELS)
    assert figures["pass_fail_level"] == {
        "agree": len(CORRECT),
        "of": len(LABELS),
        "rate": round(len(CORRECT) / len(LABELS), 4),
    }
    assert figures["pass_fail_level_conclusive"]["of"] == len(LABELS) - 3  # compile error, timeout, runtime error
    assert figures["inconclusive_candidates_by_cause"] == {
        "candidate_compile_error": 1,
        "candidate_runtime_error": 1,
        "candidate_timeout": 1,
    }
    assert figures["output_level_conclusive"]["rate"] > figures["output_level"]["rate"]
    assert {d["task_id"] for d in figures["disagreements"]} == {LABELS[i]["task_id"] for i in WRONG}


def test_a_reference_that_disagrees_with_the_tests_is_reported(release, engine):
    """The cross-check catches a discrepancy on the Python side too: a reference off by one, one that raises."""
    tasks = read_tasks(release)
    key = ("mbpp/101", "postgres")
    good = next(LABELS[i]["code"] for i in CORRECT if LABELS[i]["task_id"] == "mbpp/101")
    off = {key: {**tasks[key], "python_reference": "def sum_digits(n):\n    return sum(map(int, str(n))) + 1"}}
    rows = crosscheck(off, [Candidate(*key, good)], {"postgres": engine})
    assert all(r["conclusive"] and r["candidate_passes"] and not r["agree"] for r in rows)
    raising = {key: {**tasks[key], "python_reference": "def sum_digits(n):\n    return 1 // (n - n)"}}
    rows = crosscheck(raising, [Candidate(*key, good)], {"postgres": engine})
    assert {r["cause"] for r in rows} == {"python_reference_error"} and not any(r["conclusive"] for r in rows)


def test_cli_writes_comparisons_and_summary(release, tmp_path, pg_engine, monkeypatch, capsys):
    solutions = tmp_path / "correct.jsonl"
    solutions.write_text("".join(json.dumps(LABELS[i]) + "\n" for i in CORRECT[:5]))
    monkeypatch.setenv("PLBENCH_PG_DSN", pg_engine._dsn)
    out = tmp_path / "out"
    assert main(["crosscheck", "--release", str(release), "--solutions", str(solutions), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "output-level agreement 1.0" in printed and "pass/fail-level agreement 1.0" in printed
    rows = pq.read_table(out / "comparisons.parquet").to_pylist()
    assert rows and all(r["agree"] for r in rows) and {r["candidate"] for r in rows} == set(range(5))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["groups"]["mbpp/postgres"]["pass_fail_level"]["of"] == 5


RULES = Rules(atol=1e-6, rtol=1e-7, unordered=False, truthy=False)


@pytest.mark.parametrize(
    "actual, expected, rules, same",
    [
        (0.1 + 0.2, 0.3, RULES, True),
        (0.31, 0.3, RULES, False),
        (12.5664, 12.566, Rules(0.0, 0.001, False, False), True),
        ((1, "a"), (1, "a"), RULES, True),
        ([1, 2], (1, 2), RULES, True),  # tuples and lists alike
        ([2, 1], [1, 2], RULES, False),
        ([2, 1], {1, 2}, RULES, True),  # a set expected: order-free
        ([(1, 2), (3, 4)], [(3, 4), (1, 2)], Rules(1e-6, 1e-7, True, False), True),
        ({"a": 1.0, "b": 2}, {"b": 2, "a": 1}, RULES, True),
        ({"a": 1}, {"a": 1, "b": 2}, RULES, False),
        (float("nan"), math.nan, RULES, True),
        (None, 0, RULES, False),
        ("match object", True, Rules(1e-6, 1e-7, False, True), True),
        ([], False, Rules(1e-6, 1e-7, False, True), True),
    ],
)
def test_python_outputs_are_normalized_before_comparison(actual, expected, rules, same):
    assert outputs_agree(actual, expected, rules) is same


@pytest.mark.parametrize(
    "answer, code",
    [
        ("Here:\n```sql\nCREATE FUNCTION f() ...;\n```\nDone.", "CREATE FUNCTION f() ...;"),
        ("```text\nnotes\n```\n```plpgsql\nCREATE OR REPLACE FUNCTION g();\n```", "CREATE OR REPLACE FUNCTION g();"),
        ("```\nprint(1)\n```\n```\ncreate function h();\n```", "create function h();"),
        ("CREATE FUNCTION bare();", "CREATE FUNCTION bare();"),
    ],
)
def test_code_is_taken_from_the_answers_fenced_sql_block(answer, code):
    assert extract_code(answer) == code


def test_a_candidate_for_an_unknown_task_is_refused_before_anything_runs(release, engine):
    with pytest.raises(ValueError, match="mbpp/999 \\(postgres\\)"):
        crosscheck(read_tasks(release), [Candidate("mbpp/999", "postgres", "x")], {"postgres": engine})
