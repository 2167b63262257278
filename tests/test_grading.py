"""Grading a hostile candidate (issue 9 §1-7) on a real PostgreSQL: no forged verdict, no hang, no lost result.

Every test here is an attack that fooled, stalled or crashed `plbench evaluate` before the verdict
moved out of the candidate's session (plbench.grading).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import cli
from plbench.config import NotConfigured
from plbench.diagnostics import INTERFACE, INVALID_ARTIFACT, WRONG_LOGIC
from plbench.engines.postgres import CANDIDATE_ROLE, PostgresEngine
from plbench.evaluate import Candidate, evaluate, grade, passes, read_solutions
from plbench.grading.blocks import csv_lines, expected_outputs
from plbench.grading.results import summarize
from plbench.grading.trivial import REASON, gate_parts, run_trivial, trivial_gate
from plbench.grading.types import parse_type
from plbench.mbpp.artifacts import repr_sql
from plbench.spider.tasks import reference_block
from plbench.subsets import SUBSETS, SubsetRelease
from plbench.taskrow import TaskRow
from plbench.types import PyType
from tests.helpers import release_row, typed_task

SORT = typed_task(
    ["xs"], [(([3, 1, 2],), [1, 2, 3]), (([],), []), (([2, 2, 1],), [1, 2, 2])], entry="sort_list", source_id="1"
)
TIMEOUT_S = 1.0
GRACE_S = 1.0  # the watchdog's: a cancel at timeout + grace, the backend ended a grace later


def _function(body: str, declare: str = "") -> str:
    return (
        "CREATE OR REPLACE FUNCTION sort_list(xs bigint[]) RETURNS bigint[] LANGUAGE plpgsql AS $$\n"
        f"{declare}BEGIN\n{body}\nEND;\n$$;"
    )


RIGHT = _function("RETURN ARRAY(SELECT x FROM unnest(xs) x ORDER BY x);")


@pytest.fixture(scope="module")
def fast(pg_engine):
    engine = PostgresEngine.start(pg_engine._dsn, Path("unused"), statement_timeout_s=TIMEOUT_S)
    yield engine
    engine.close()


def _verdicts(rows: list[dict]) -> list[str]:
    return [r["verdict"] for r in rows]


def _admin(pg_engine, query: str, params=()) -> list[tuple]:
    with psycopg.connect(pg_engine._dsn, autocommit=True) as conn:
        cur = conn.execute(query, params or None)
        return cur.fetchall() if cur.description else []


# ---- forged verdicts (§1-3) ---------------------------------------------------------------------

FORGERS = {
    # §1: verdict lines printed by the candidate, then a wrong value.
    "fake_verdict_lines": _function(
        "RAISE NOTICE 'PLBENCH_CASE 1 PASS'; RAISE NOTICE 'PLBENCH_CASE 2 PASS'; RAISE NOTICE 'PLBENCH_CASE 3 PASS';"
        " RAISE NOTICE 'PLBENCH_SUMMARY 3 OF 3'; RETURN ARRAY[0]::bigint[];"
    ),
    # §2: an = operator of its own on bigint[] that is always true, then a wrong value.
    "operator_override": "CREATE FUNCTION f_eq(bigint[], bigint[]) RETURNS boolean LANGUAGE sql AS 'SELECT true';\n"
    "CREATE OPERATOR = (LEFTARG = bigint[], RIGHTARG = bigint[], FUNCTION = f_eq);\n"
    "CREATE OPERATOR <> (LEFTARG = bigint[], RIGHTARG = bigint[], FUNCTION = f_eq);\n"
    + _function("RETURN ARRAY[0]::bigint[];"),
    # §3: no algorithm, the expected value parsed out of the statement that called it.
    "reads_the_answers": _function(
        "EXECUTE 'SELECT ' || (regexp_match(current_query(), 'v_expected := ([^;]*);'))[1] INTO r; RETURN r;",
        declare="DECLARE r bigint[];\n",
    ),
}


@pytest.mark.parametrize("name", sorted(FORGERS))
def test_a_wrong_candidate_cannot_forge_a_pass(fast, name):
    rows = grade(fast, release_row(SORT), FORGERS[name])
    assert len(rows) == 3 and "PASS" not in _verdicts(rows[:1] + rows[2:]), rows  # case 2 expects [] anyway


def test_the_candidates_session_never_sees_an_expected_value(fast):
    spy = _function("RAISE EXCEPTION 'seen: %', current_query();")
    rows = grade(fast, release_row(SORT), spy)
    seen = rows[0]["detail"]
    assert _verdicts(rows) == ["ERROR"] * 3 and "seen: " in seen
    assert "ARRAY[3, 1, 2]" in seen  # the arguments are there, as the prompt's signature promises
    assert "ARRAY[1, 2, 3]" not in seen and "PLBENCH" not in seen  # the expected values are not


# ---- stalls and crashes (§4-6) --------------------------------------------------------------------

LOOPING_BLOCK = (
    "DO $$ BEGIN LOOP BEGIN PERFORM pg_sleep(0.5); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$;"
)
UNKILLABLE = _function("LOOP BEGIN PERFORM pg_sleep(0.5); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP;")


def _timed(fn):
    """fn() in a thread, so a hang fails the test instead of stopping it: (result, seconds)."""
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(value=fn()), daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(timeout=TIMEOUT_S + 2 * GRACE_S + 10)
    assert not thread.is_alive(), "the evaluation hung"
    return out["value"], time.monotonic() - start


def test_a_loop_that_catches_the_cancel_costs_at_most_the_timeout_and_the_grace(pg_engine, fast):
    rows, seconds = _timed(lambda: grade(fast, release_row(SORT), UNKILLABLE))
    assert _verdicts(rows) == ["TIMEOUT"] * 3 and {r["category"] for r in rows} == {WRONG_LOGIC}
    assert seconds < TIMEOUT_S + 2 * GRACE_S + 1.5
    sleeping = "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND query LIKE %s AND pid <> pg_backend_pid()"
    assert _admin(pg_engine, sleeping, [CANDIDATE_ROLE, "%to_jsonb%"]) == [(0,)]  # its backend is gone
    assert _verdicts(grade(fast, release_row(SORT), RIGHT)) == ["PASS"] * 3  # the next one, on a fresh session


def test_a_loop_while_installing_is_a_timeout_too(fast):
    rows, seconds = _timed(lambda: grade(fast, release_row(SORT), LOOPING_BLOCK))
    assert _verdicts(rows) == ["TIMEOUT"] * 3 and seconds < TIMEOUT_S + 2 * GRACE_S + 1.5


def test_a_candidate_that_ends_its_own_session_gets_a_verdict_and_the_run_goes_on(fast):
    suicide = "SELECT pg_terminate_backend(pg_backend_pid());"
    in_a_call = _function("PERFORM pg_terminate_backend(pg_backend_pid()); RETURN xs;")
    for code in (suicide, in_a_call):
        rows = grade(fast, release_row(SORT), code)
        assert _verdicts(rows) == ["ERROR"] * 3 and {r["category"] for r in rows} == {INVALID_ARTIFACT}
        assert "ended its own database session" in rows[0]["detail"]
        assert _verdicts(grade(fast, release_row(SORT), RIGHT)) == ["PASS"] * 3


def test_role_settings_a_candidate_commits_do_not_persist(pg_engine, fast):
    for attack in (
        "ALTER ROLE CURRENT_USER SET default_transaction_read_only = on; COMMIT;",
        "ALTER ROLE CURRENT_USER IN DATABASE postgres SET statement_timeout = 0; COMMIT;",
        "ALTER ROLE CURRENT_USER PASSWORD 'mine'; COMMIT;",
    ):
        grade(fast, release_row(SORT), attack + RIGHT)
        settings = "SELECT count(*) FROM pg_db_role_setting WHERE setrole = %s::regrole"
        assert _admin(pg_engine, settings, [CANDIDATE_ROLE]) == [(0,)], attack
        fresh = PostgresEngine.start(pg_engine._dsn, Path("unused"), statement_timeout_s=TIMEOUT_S)  # new logins
        try:
            assert _verdicts(grade(fresh, release_row(SORT), RIGHT)) == ["PASS"] * 3, attack
        finally:
            fresh.close()


def test_a_candidate_that_ran_out_of_time_has_no_settled_verdict(fast):
    slow = _function("PERFORM pg_sleep(3 * cardinality(xs)); RETURN ARRAY(SELECT x FROM unnest(xs) x ORDER BY x);")
    wrong = _function("RETURN xs;")
    task = release_row(SORT)
    assert [passes(fast, task, code) for code in (RIGHT, wrong, slow)] == [True, False, None]


def test_ending_the_transaction_drops_neither_the_timeout_nor_leaves_a_schema(pg_engine, fast):
    schemas = "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'plb\\_s\\_%%'"
    before = _admin(pg_engine, schemas)
    escape = "COMMIT; BEGIN; SET statement_timeout = 0; SET search_path = pg_catalog;"
    slow = _function("PERFORM pg_sleep(3 * cardinality(xs)); RETURN ARRAY(SELECT x FROM unnest(xs) x ORDER BY x);")
    rows, seconds = _timed(lambda: grade(fast, release_row(SORT), slow.replace("$$;", "$$; " + escape)))
    assert _verdicts(rows) == ["TIMEOUT"] * 3 and seconds < TIMEOUT_S + GRACE_S + 1
    right = grade(fast, release_row(SORT), RIGHT + " " + escape)
    assert _verdicts(right) == ["PASS"] * 3  # correct code still passes, under the harness's settings
    assert _admin(pg_engine, schemas) == before  # the committed schemas were dropped


def test_unknown_tasks_and_dialects_get_their_own_verdict_and_the_run_goes_on(fast, tmp_path):
    pq.write_table(pa.Table.from_pylist([release_row(SORT), release_row(SORT, "oracle")]), tmp_path / "tasks.parquet")
    candidates = [
        Candidate("mbpp/999", "postgres", RIGHT),
        Candidate(SORT.task_id, "mysql", RIGHT),
        Candidate(SORT.task_id, "oracle", RIGHT),
        Candidate(SORT.task_id, "postgres", RIGHT),
    ]
    rows = evaluate(tmp_path, candidates, {"postgres": fast, "oracle": NotConfigured("PLBENCH_ORACLE_DSN is not set")})
    by_candidate = {}
    for r in rows:
        by_candidate.setdefault(r["candidate"], []).append(r)
    assert sorted(by_candidate) == [0, 1, 2, 3]
    assert "not a task of release" in by_candidate[0][0]["detail"]
    assert by_candidate[1][0]["detail"].startswith("unknown dialect 'mysql'")
    assert "PLBENCH_ORACLE_DSN is not set" in by_candidate[2][0]["detail"]
    assert {r["category"] for c in (0, 1, 2) for r in by_candidate[c]} == {"not_graded"}
    assert _verdicts(by_candidate[3]) == ["PASS"] * 3


# ---- honesty gaps (§7) ----------------------------------------------------------------------------


def test_a_task_s_calls_are_made_once_for_its_candidates_and_never_for_another_row(fast):
    """The same task id with other cases (another release, a task fixed since) is graded on its own cases."""
    descending = typed_task(
        ["xs"], [(([3, 1, 2],), [3, 2, 1]), (([],), []), (([2, 2, 1],), [2, 2, 1])], entry="sort_list", source_id="1"
    )
    assert descending.task_id == SORT.task_id
    for _ in range(2):
        assert _verdicts(grade(fast, release_row(SORT), RIGHT)) == ["PASS"] * 3
        assert _verdicts(grade(fast, release_row(descending), RIGHT)) == ["FAIL", "PASS", "FAIL"]


def test_an_error_message_with_a_newline_keeps_its_verdict_and_detail(fast):
    rows = grade(fast, release_row(SORT), _function("RAISE EXCEPTION E'first line\\nsecond line';"))
    assert _verdicts(rows) == ["ERROR"] * 3 and "first line\nsecond line" in rows[0]["detail"]


def test_code_no_engine_can_be_sent_gets_a_verdict_and_the_run_goes_on(fast, tmp_path):
    """A lone surrogate, as a JSON escape in a solutions file spells it: before, the run stopped at it on a
    UnicodeEncodeError."""
    path = tmp_path / "s.jsonl"
    unsendable = json.dumps({"task_id": SORT.task_id, "dialect": "postgres", "code": RIGHT + " -- \ud800"})
    path.write_text(unsendable + "\n" + json.dumps({"task_id": SORT.task_id, "dialect": "postgres", "code": RIGHT}))
    pq.write_table(pa.Table.from_pylist([release_row(SORT)]), tmp_path / "tasks.parquet")
    rows = evaluate(tmp_path, read_solutions(path), {"postgres": fast})
    first, second = ([r for r in rows if r["candidate"] == n] for n in (0, 1))
    assert _verdicts(first) == ["NOT_RUN"] * 3 and {r["category"] for r in first} == {INVALID_ARTIFACT}
    assert "not Unicode text (surrogates not allowed: '\\ud800' at character" in first[0]["detail"]
    assert _verdicts(second) == ["PASS"] * 3


def test_a_non_utf8_solutions_file_names_its_line(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        json.dumps({"task_id": "mbpp/1", "dialect": "postgres", "code": "x"}).encode() + b'\n{"c": "\xff"}\n'
    )
    with pytest.raises(ValueError, match="line 2: not UTF-8"):
        read_solutions(path)


def _cli(tmp_path, solutions: list[Candidate], *extra: str, release: Path | None = None) -> int:
    path = tmp_path / "solutions.jsonl"
    path.write_text("".join(json.dumps(c.__dict__) + "\n" for c in solutions))
    return cli.main(
        ["evaluate", "--release", str(release or tmp_path), "--solutions", str(path), "--out", str(tmp_path / "out")]
        + list(extra)
    )


@pytest.fixture
def release(tmp_path, pg_engine, monkeypatch):
    monkeypatch.setenv("PLBENCH_PG_DSN", pg_engine._dsn)
    pq.write_table(pa.Table.from_pylist([release_row(SORT)]), tmp_path / "tasks.parquet")
    return tmp_path


def test_cases_name_their_candidate_and_the_summary_counts_tasks_and_candidates(release, capsys):
    wrong = _function("RETURN xs;")
    assert _cli(release, [Candidate(SORT.task_id, "postgres", code) for code in (RIGHT, wrong, RIGHT)]) == 0
    cases = pq.read_table(release / "out" / "cases.parquet").to_pylist()
    assert [(r["candidate"], r["verdict"]) for r in cases] == [
        *[(0, "PASS")] * 3,
        (1, "FAIL"),
        (1, "PASS"),
        (1, "FAIL"),
        *[(2, "PASS")] * 3,
    ]
    out = capsys.readouterr().out
    assert "mbpp/postgres: Mean Test Pass@1 0.7778, Suite Pass@1 0.6667 over 1 tasks (3 candidates;" in out


def test_results_are_kept_as_they_come_and_resume_continues(release, capsys):
    candidates = [Candidate(SORT.task_id, "postgres", code) for code in (RIGHT, _function("RETURN xs;"), RIGHT)]
    assert _cli(release, candidates) == 0
    log = release / "out" / "cases.jsonl"
    head, first, second, _ = log.read_text().split("\n", 3)
    # As if the run had stopped while writing the third candidate: a complete first line, a torn one.
    log.write_text(f"{head}\n{first}\n{second[: len(second) // 2]}")
    assert _cli(release, candidates, "--resume") == 0
    cases = pq.read_table(release / "out" / "cases.parquet").to_pylist()
    assert [r["candidate"] for r in cases] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    other = [Candidate(SORT.task_id, "postgres", RIGHT)]
    assert _cli(release, other, "--resume") == 2  # another solutions file: refused, nothing mixed
    assert "belongs to another run" in capsys.readouterr().err


def test_configuration_errors_are_one_line(release, monkeypatch, capsys):
    assert _cli(release, [Candidate(SORT.task_id, "postgres", RIGHT)], release=release / "missing") == 2
    monkeypatch.setenv("PLBENCH_PG_DSN", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert _cli(release, [Candidate(SORT.task_id, "postgres", RIGHT)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("plbench: ") for line in err) and "Traceback" not in "".join(err)


# ---- reading a release row's types -------------------------------------------------------------------

INT, STR, FLT, BOOL = (PyType(k) for k in ("int", "str", "float", "bool"))


@pytest.mark.parametrize(
    "t",
    [
        INT,
        STR.with_nullable(),
        PyType("list", (INT.with_nullable(),)),
        PyType("tuple_seq", (PyType("record", (INT, STR)),)).with_nullable(),
        PyType("dict", (STR, PyType("list", (FLT,)))),
        PyType("variant", (INT, STR, BOOL)),
        PyType("set", (PyType("record", (INT,)),)),
        PyType("json").with_nullable(),
        PyType("none", nullable=True),
        PyType("list", (PyType("list", (PyType("variant", (INT, BOOL)).with_nullable(),)),)),
    ],
)
def test_python_type_spellings_read_back(t):
    assert parse_type(t.describe()) == t


def test_an_unknown_type_spelling_is_an_error():
    with pytest.raises(ValueError, match="not a python_type spelling"):
        parse_type("frozenset[int]")


# ---- block tasks (Spider; issue 8 §6) -----------------------------------------------------------

FIX_SCHEMA = "s1_grading_fixture"


@pytest.fixture(scope="module")
def singers(pg_engine):
    """A loaded database the tests build: its schema, committed, as a build's load leaves it."""
    _admin(
        pg_engine,
        f"DROP SCHEMA IF EXISTS {FIX_SCHEMA} CASCADE; CREATE SCHEMA {FIX_SCHEMA}; "
        f"CREATE TABLE {FIX_SCHEMA}.singer (name text, age int); "
        f"INSERT INTO {FIX_SCHEMA}.singer VALUES ('Ann', 30), ('Bob', 41), ('Cé''line', NULL)",
    )
    return FIX_SCHEMA


def _spider_row(lines: list[str], ordered: bool = True, **fields) -> dict:
    return {
        "task_id": "spider_plsql/7",
        "subset": "spider_plsql",
        "dialect": "postgres",
        "source_id": "7",
        "database": "fixture",
        "signature": None,
        "test_cases": json.dumps({"expected_lines": lines, "ordered": ordered}),
        **fields,
    }


NAMES = reference_block("postgres", "SELECT name, age FROM singer ORDER BY name", ["text", "integer"])
LINES = ["Ann,30", "Bob,41", "Cé'line,NULL"]


def _prints(*lines: str) -> str:
    body = "".join(f" RAISE NOTICE '%', {repr_sql(x)};" for x in lines)
    return f"DO $$ BEGIN{body} END $$;"


@pytest.mark.parametrize(
    "code, ordered, verdict, category",
    [
        (NAMES, True, "PASS", None),
        (_prints(*reversed(LINES)), False, "PASS", None),  # a multiset when the gold does not order
        (_prints(*reversed(LINES)), True, "FAIL", WRONG_LOGIC),
        (_prints(), True, "FAIL", WRONG_LOGIC),
        (_prints("PLBENCH_CASE 1 PASS", "PLBENCH_SUMMARY 1 OF 1"), True, "FAIL", WRONG_LOGIC),
        ("DO $$ BEGIN RAISE NOTICE '%', (SELECT count(*) FROM singr); END $$;", True, "ERROR", INTERFACE),
        ("DO $$ BEGIN RAISE NOTICE '%' 1; END $$;", True, "ERROR", INVALID_ARTIFACT),
        ("DO $$ BEGIN RAISE NOTICE '%', 1 / 0; END $$;", True, "ERROR", WRONG_LOGIC),
        ("DO $$ BEGIN DELETE FROM singer; END $$;", True, "ERROR", WRONG_LOGIC),  # read-only: refused
    ],
)
def test_a_block_is_graded_by_the_lines_it_printed(fast, singers, code, ordered, verdict, category):
    [row] = grade(fast, _spider_row(LINES, ordered), code, singers)
    assert (row["case"], row["verdict"], row["category"]) == (1, verdict, category), row


def test_a_looping_block_is_a_timeout_and_an_unloaded_database_a_reference_error(fast, singers):
    rows, seconds = _timed(lambda: grade(fast, _spider_row(LINES), LOOPING_BLOCK, singers))
    assert _verdicts(rows) == ["TIMEOUT"] and seconds < TIMEOUT_S + 2 * GRACE_S + 1.5
    [missing] = grade(fast, _spider_row(LINES), NAMES, "s1_not_loaded_here")
    assert (missing["verdict"], missing["category"]) == ("NOT_RUN", "reference_error")


def test_spider_tasks_are_scored_per_subset_and_dialect_through_the_release(fast, singers, tmp_path):
    row = _spider_row(LINES)
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "tasks.parquet")
    db = {"database": "fixture", "dialect": "postgres", "schema_name": singers, "loaded": True}
    pq.write_table(pa.Table.from_pylist([db]), tmp_path / "databases.parquet")
    rows = evaluate(
        tmp_path, [Candidate(row["task_id"], "postgres", c) for c in (NAMES, _prints())], {"postgres": fast}
    )
    summary = summarize(rows)["spider_plsql/postgres"]
    assert (summary["tasks"], summary["candidates"], summary["suite_pass@1"]) == (1, 2, 0.5)


def test_spider2_accepts_any_of_its_result_files(fast, singers):
    results = {"x.csv": "name,age\nAnn,30\n", "x_a.csv": "name,age\nAnn,30.0\nBob,41\nCé'line,\n"}
    row = _spider_row([], subset="spider2", test_cases=json.dumps({"reference_results": results, "ordered": True}))
    assert [o.lines for o in expected_outputs(row)] == [("Ann,30",), tuple(LINES)]
    assert _verdicts(grade(fast, row, NAMES, singers)) == ["PASS"]


# ---- trivial candidates (issue 8 §7) ------------------------------------------------------------------

CONSTANT = typed_task(["n"], [((1,), 7), ((2,), 7)], entry="seven", source_id="2")  # every case expects 7


def test_trivial_candidates_fail_a_task_that_can_fail_and_the_gate_rejects_blocks_they_pass(fast, singers):
    tasks = [
        release_row(SORT),
        release_row(CONSTANT),
        _spider_row(LINES),
        _spider_row([], source_id="8", task_id="spider_plsql/8"),  # an empty gold result
        _spider_row(["Ann,30"], source_id="9", task_id="spider_plsql/9"),  # one line: it is the answer
    ]
    results = run_trivial(tasks, fast, {("fixture", "postgres"): singers})
    assert results == {
        ("mbpp/1", "postgres"): {"returns_null": False, "returns_the_example": False},
        ("mbpp/2", "postgres"): {"returns_null": False, "returns_the_example": True},
        ("spider_plsql/7", "postgres"): {"prints_nothing": False, "prints_the_first_line": False},
        ("spider_plsql/8", "postgres"): {"prints_nothing": True},  # nothing to print first
        ("spider_plsql/9", "postgres"): {"prints_nothing": False},  # the first line is the answer
    }
    oracle = {**_spider_row([], source_id="8", task_id="spider_plsql/8"), "dialect": "oracle"}
    drop, rejections, section = trivial_gate([*tasks, oracle], results)
    # The constant-passable MBPP task is listed, not rejected; the empty-result block goes in both dialects.
    assert drop == {("spider_plsql/8", "postgres"), ("spider_plsql/8", "oracle")}
    assert [(r.source_id, r.reason_code, r.dialect) for r in rejections] == [
        ("8", REASON, "postgres"),
        ("8", REASON, "oracle"),
    ]
    mbpp = section["groups"]["mbpp/postgres"]
    assert mbpp["tasks"] == 2 and mbpp["candidates"]["returns_the_example"] == {"ran": 2, "passed": ["mbpp/2"]}
    assert section["groups"]["spider_plsql/postgres"]["candidates"]["prints_the_first_line"]["ran"] == 1


def test_the_release_gate_rejects_through_the_subsets_part_and_says_so_in_its_manifest(fast, singers):
    rows = [TaskRow(**_task_row_fields(r)) for r in (release_row(CONSTANT), _spider_row([], source_id="8"))]
    parts = [
        SubsetRelease("mbpp", 1, {}, rows[:1], [], {}),
        SubsetRelease(
            "spider_plsql",
            1,
            {},
            rows[1:],
            [],
            {},
            tables={"databases.parquet": ([{**FIXTURE_DB, "schema_name": singers}], None)},
            manifest={"normalization": {"spider1": {}}},
        ),
        None,
    ]
    gated = gate_parts(parts, SUBSETS, fast)
    assert [r.task_id for r in gated[0].rows] == ["mbpp/2"] and gated[1].rows == [] and gated[2] is None
    assert [r.reason_code for r in gated[1].rejections] == [REASON]
    assert gated[0].manifest["trivial_candidates"]["mbpp"]["groups"]["mbpp/postgres"]["candidates"][
        "returns_the_example"
    ] == {"ran": 1, "passed": ["mbpp/2"]}
    assert gated[1].manifest["normalization"] == {"spider1": {}}  # its own sections kept
    skipped = gate_parts(parts, SUBSETS, NotConfigured("no server here"))
    assert skipped[0].rows == rows[:1] and skipped[1].manifest["trivial_candidates"]["spider_plsql"] == {
        "ran": False,
        "reason": "no server here",
    }


FIXTURE_DB = {"database": "fixture", "dialect": "postgres", "loaded": True}


def _task_row_fields(row: dict) -> dict:
    fields = {f.name for f in dataclasses.fields(TaskRow)}
    defaults = {"source_dataset": "test", "prompt": "", "scaffold": "", "comparison": "{}", "replay_status": "passed"}
    return {**defaults, **{k: v for k, v in row.items() if k in fields and v is not None}}


def test_a_task_no_grader_here_knows_gets_rows_that_say_so(fast, tmp_path):
    procedure = {"task_id": "procedures/a1", "subset": "procedures", "dialect": "postgres", "signature": None}
    pq.write_table(
        pa.Table.from_pylist([{**procedure, "test_cases": json.dumps(["CALL p()"])}]), tmp_path / "tasks.parquet"
    )
    [row] = evaluate(tmp_path, [Candidate("procedures/a1", "postgres", "CREATE PROCEDURE p() ...")], {"postgres": fast})
    assert (row["category"], row["detail"]) == ("not_graded", "no grader here for the tasks of procedures")


def test_official_result_csvs_read_with_any_line_ending():
    # Spider 2.0's result files end lines with \r\n, and some hold a bare \r; quoted newlines stay in the field.
    assert csv_lines('a,b\r\n1,x\r2,y\n"q\r\nr",3\n') == ("1,x", "2,y", "q\r\nr,3")


def test_the_gate_groups_procedure_tasks_by_database_and_distinct_grading_inputs(monkeypatch):
    from plbench.grading import trivial

    monkeypatch.setattr(trivial, "GRADING_INPUTS_PER_COPY", 2)

    def task(n: int, database: str, seed: int, kind: str = "procedure") -> dict:
        suite = {"call_suite": f"suite {seed}"} if kind == "procedure" else {"signature": "[]"}
        inputs = {c: f"{c} {seed}" for c in ("setup_sql", "test_cases")}
        return {"task_id": f"t{n}", "dialect": "postgres", "database": database, **inputs, **suite}

    # seeds 1-3 on db a (seed 1 in two scenarios), seed 4 on db b, one function task
    tasks = [task(1, "a", 1), task(2, "a", 2), task(3, "b", 4), task(4, "a", 1), task(5, "a", 3)]
    tasks.append(task(6, None, 9, kind="function"))
    ids = [[t["task_id"] for t in batch] for batch in trivial.batches(tasks)]
    assert ids == [["t6"], ["t1", "t4", "t2"], ["t5"], ["t3"]]


def test_a_kept_verdict_is_keyed_by_the_row_but_its_stamps_and_by_its_database_s_content(fast, tmp_path):
    from plbench.grading.verdict_cache import VerdictCache

    cache = VerdictCache(tmp_path / "verdicts.sqlite3", fast)
    task = {**release_row(SORT), "database": "fixture", "build_id": "one"}
    keys = cache.keys(task, [RIGHT, "other code"])
    assert len(set(keys)) == 2 and cache.keys({**task, "build_id": "two"}, [RIGHT]) == keys[:1]
    assert cache.keys({**task, "test_cases": "[]"}, [RIGHT]) != keys[:1]
    database = {**FIXTURE_DB, "data_sha256": "a" * 64}
    cache.identify_databases([database])
    loaded = cache.keys(task, [RIGHT])
    cache.identify_databases([{**database, "data_sha256": "b" * 64}])
    assert len({keys[0], *loaded, *cache.keys(task, [RIGHT])}) == 3


def test_a_file_of_verdicts_that_does_not_read_is_replaced_and_everything_graded_again(fast, tmp_path):
    from plbench.grading.verdict_cache import VerdictCache

    path = tmp_path / "verdicts.sqlite3"
    path.write_bytes(b"not a database, a torn write")
    cache = VerdictCache(path, fast)
    [key] = cache.keys(release_row(SORT), [RIGHT])
    assert cache.kept == {} and cache.get([key]) == {}
    cache.put({key: True})
    cache.save()
    assert VerdictCache(path, fast).get([key]) == {key: True}
