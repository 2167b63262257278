"""Scoring candidates against release rows on a real PostgreSQL, with failures classified."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from plbench.diagnostics import CATEGORY_BY_CODE, INTERFACE, INVALID_ARTIFACT, category_of
from plbench.engines.postgres import PostgresEngine
from plbench.evaluate import Candidate, evaluate, read_solutions
from plbench.grading.results import summarize
from tests.conftest import PG_DATA_DIR
from tests.helpers import release_row, typed_task

SORT = typed_task(
    ["xs"], [(([3, 1, 2],), [1, 2, 3]), (([],), []), (([2, 2, 1],), [1, 2, 2])], entry="sort_list", source_id="1"
)


def _release(tmp_path):
    pq.write_table(pa.Table.from_pylist([release_row(SORT)]), tmp_path / "tasks.parquet")
    return tmp_path


def _function(body: str, name: str = "sort_list") -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {name}(xs bigint[]) RETURNS bigint[] LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nEND;\n$$;"
    )


CANDIDATES = {
    "right": _function("RETURN ARRAY(SELECT x FROM unnest(xs) x ORDER BY x);"),
    "wrong": _function("RETURN xs;"),
    "syntax": _function("RETURN ARRAY(SELECT x FROM unnest(xs) x ORDER BY x;"),
    "misnamed": _function("RETURN xs;", name="sort_lst"),
    "raises": _function("RETURN ARRAY[1 / (cardinality(xs) - cardinality(xs))];"),
    "loops": _function("LOOP END LOOP;"),
}


@pytest.fixture(scope="module")
def engine(pg_engine):
    fast = PostgresEngine.start(pg_engine._dsn, PG_DATA_DIR, statement_timeout_s=1.0)
    yield fast
    fast.close()


@pytest.mark.parametrize(
    "name, verdicts, category",
    [
        ("right", ["PASS", "PASS", "PASS"], None),
        ("wrong", ["FAIL", "PASS", "FAIL"], "wrong_logic_or_output"),
        ("syntax", ["NOT_RUN"] * 3, "invalid_artifact"),
        ("misnamed", ["ERROR"] * 3, "interface_or_grounding"),
        ("raises", ["ERROR"] * 3, "wrong_logic_or_output"),
        ("loops", ["TIMEOUT"] * 3, "wrong_logic_or_output"),
    ],
)
def test_each_candidate_gets_per_case_verdicts_and_a_category(engine, tmp_path, name, verdicts, category):
    rows = evaluate(_release(tmp_path), [Candidate(SORT.task_id, "postgres", CANDIDATES[name])], {"postgres": engine})
    assert [r["verdict"] for r in rows] == verdicts
    assert {r["category"] for r in rows if r["verdict"] != "PASS"} <= {category}


def test_a_candidate_that_drops_objects_cannot_disturb_the_next(engine, tmp_path):
    release = _release(tmp_path)
    hostile = "DROP SCHEMA IF EXISTS public CASCADE; " + CANDIDATES["right"]
    rows = evaluate(
        release,
        [Candidate(SORT.task_id, "postgres", hostile), Candidate(SORT.task_id, "postgres", CANDIDATES["right"])],
        {"postgres": engine},
    )
    # Sessions run as an unprivileged role: the DROP is refused (42501), so the hostile candidate does
    # not install; the next one is untouched.
    assert [r["verdict"] for r in rows] == ["NOT_RUN"] * 3 + ["PASS"] * 3
    assert "42501" in rows[0]["detail"]


def test_metrics_and_reference_errors(engine, tmp_path):
    release = _release(tmp_path)
    rows = evaluate(
        release, [Candidate(SORT.task_id, "postgres", CANDIDATES[n]) for n in ("right", "wrong")], {"postgres": engine}
    )
    summary = summarize(rows)["mbpp/postgres"]
    assert summary["tasks"] == 1 and summary["candidates"] == 2 and summary["reference_errors"] == 0
    assert summary["mean_test_pass@1"] == round((1 + 1 / 3) / 2, 4) and summary["suite_pass@1"] == 0.5
    broken = [{**r, "category": "reference_error"} for r in rows[:3]]
    assert summarize(broken)["mbpp/postgres"]["reference_errors"] == 1


def test_scores_count_every_task():
    rows = [
        {
            "candidate": "ab".index(t),
            "task_id": t,
            "subset": "mbpp",
            "dialect": "postgres",
            "case": c,
            "verdict": v,
            "category": None if v == "PASS" else "wrong_logic_or_output",
        }
        for t, c, v in [("a", 1, "PASS"), ("a", 2, "PASS"), ("b", 1, "PASS"), ("b", 2, "FAIL")]
    ]
    assert summarize(rows)["mbpp/postgres"]["mean_test_pass@1"] == 0.75
    assert summarize(rows)["mbpp/postgres"]["suite_pass@1"] == 0.5


@pytest.mark.parametrize("code, category", sorted(CATEGORY_BY_CODE.items()))
def test_every_diagnostic_code_has_its_category(code, category):
    assert category_of(code) == category


def test_unknown_codes_and_malformed_solution_files(tmp_path):
    assert category_of("XX000") == INVALID_ARTIFACT and category_of("42883") == INTERFACE
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"task_id": "mbpp/1", "dialect": "postgres", "code": "x"}) + "\n{oops\n")
    with pytest.raises(ValueError, match="line 2"):
        read_solutions(path)
