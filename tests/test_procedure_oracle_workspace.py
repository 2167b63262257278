"""Procedural tasks on Oracle: the workspace's statements and the grader's comparison, checked here without a
server (exact texts, parsed by sqlglot's Oracle dialect); their execution against PLBENCH_ORACLE_DSN, the
same cases as PostgreSQL's grading tests, skipped without one. No test here executes Oracle without a server."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest
import sqlglot

from plbench.normalize.emit import normalize, write_files
from plbench.normalize.sqlite_source import read_sqlite
from plbench.procedures.grade import ProcedureTask
from plbench.procedures.oracle_grade import compared, grade_oracle
from plbench.procedures.oracle_replay import ORACLE_ERROR, database_folder, first_difference, unstable
from plbench.procedures.oracle_workspace import (
    TABLES_QUERY,
    OracleCopy,
    OracleTrace,
    keyed_rows,
    table_query,
    table_state,
)
from plbench.procedures.workspace import TAMPERED, CallResult
from tests.procedure_fixtures import RESERVED_SCHEMA, SCHEMA

ORACLE_DSN = os.environ.get("PLBENCH_ORACLE_DSN")
needs_oracle = pytest.mark.skipif(not ORACLE_DSN, reason="PLBENCH_ORACLE_DSN is not set")


def _oracle_db(tmp_path, name: str, schema: str):
    """The database normalized for Oracle as the build emits it (no server needed)."""
    path = tmp_path / f"{name}.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(schema)
    conn.close()
    return normalize(read_sqlite(path, "spider1", name, f"{name}.sqlite"), "oracle")


def test_the_copy_is_the_normalized_ddl_its_rows_and_constraints_in_that_order(tmp_path):
    copy = OracleCopy.of(_oracle_db(tmp_path, "procfix", SCHEMA))
    assert copy.key == "spider1/procfix"
    assert copy.keys == {"ARCHIVE": ("ID",), "CUSTOMER": ("ID",), "ORDERS": ("ORDER_ID",)}
    assert copy.statements == (
        "CREATE TABLE ARCHIVE (\n  ID NUMBER(19),\n  NOTE VARCHAR2(4000 BYTE),\n  PRIMARY KEY (ID)\n);",
        "CREATE TABLE CUSTOMER (\n  ID NUMBER(19),\n  NAME VARCHAR2(4000 BYTE) NOT NULL,\n  CITY VARCHAR2(4000 BYTE),\n"
        "  SCORE NUMBER(19),\n  JOINED DATE,\n  PRIMARY KEY (ID)\n);",
        "CREATE TABLE ORDERS (\n  ORDER_ID NUMBER(19),\n  CUSTOMER_ID NUMBER(19),\n  AMOUNT BINARY_DOUBLE,\n"
        "  STATUS VARCHAR2(4000 BYTE),\n  PRIMARY KEY (ORDER_ID)\n);",
        "INSERT ALL\n"
        "  INTO CUSTOMER (ID, NAME, CITY, SCORE, JOINED) VALUES (1, 'Ann', 'Paris', 70, DATE '2020-01-05')\n"
        "  INTO CUSTOMER (ID, NAME, CITY, SCORE, JOINED) VALUES (2, 'Bob', NULL, 50, DATE '2021-03-01')\n"
        "  INTO CUSTOMER (ID, NAME, CITY, SCORE, JOINED) VALUES (3, 'Cy', 'Oslo', 50, DATE '2019-12-31')\n"
        "  INTO CUSTOMER (ID, NAME, CITY, SCORE, JOINED) VALUES (4, 'Dee', 'Paris', 90, NULL)\n"
        "  INTO CUSTOMER (ID, NAME, CITY, SCORE, JOINED) VALUES (5, 'Eve', 'Rome', 20, DATE '2022-07-07')\n"
        "SELECT 1 FROM DUAL;",
        "INSERT ALL\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (10, 1, 12.5d, 'open')\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (11, 1, 7.0d, 'closed')\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (12, 2, 100.25d, 'open')\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (13, 4, 10.0d, 'open')\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (14, 5, 3.0d, NULL)\n"
        "  INTO ORDERS (ORDER_ID, CUSTOMER_ID, AMOUNT, STATUS) VALUES (15, 3, 55.0d, 'closed')\n"
        "SELECT 1 FROM DUAL;",
        "ALTER TABLE ORDERS ADD CONSTRAINT FK_ORDERS_1 FOREIGN KEY (CUSTOMER_ID) REFERENCES CUSTOMER (ID) "
        "ENABLE NOVALIDATE;",
    )
    for statement in copy.statements[:5]:  # sqlglot reads ENABLE NOVALIDATE as an opaque command
        assert sqlglot.parse_one(statement, read="oracle") is not None


def test_reserved_column_names_are_copied_and_keyed_as_the_ddl_declares_them(tmp_path):
    copy = OracleCopy.of(_oracle_db(tmp_path, "resw", RESERVED_SCHEMA))
    assert copy.keys == {"EVENT": ("ID",)}
    assert copy.statements[0] == (
        'CREATE TABLE EVENT (\n  ID NUMBER(19),\n  "DATE" VARCHAR2(4000 BYTE),\n  "LEVEL" NUMBER(19),\n'
        '  "COMMENT" VARCHAR2(4000 BYTE),\n  "USER" VARCHAR2(4000 BYTE),\n  PRIMARY KEY (ID)\n);'
    )
    assert copy.statements[1].splitlines()[:2] == [
        "INSERT ALL",
        '  INTO EVENT (ID, "DATE", "LEVEL", "COMMENT", "USER") VALUES (1, \'2020-01-01\', 1, \'a\', \'ann\')',
    ]
    for statement in copy.statements:
        assert sqlglot.parse_one(statement, read="oracle") is not None


@pytest.mark.parametrize("name, schema", [("procfix", SCHEMA), ("resw", RESERVED_SCHEMA)], ids=["procfix", "resw"])
def test_the_copy_read_from_the_normalized_files_is_the_one_the_build_makes(tmp_path, name, schema):
    db = _oracle_db(tmp_path, name, schema)
    write_files(db, tmp_path / "normalized")
    folder = tmp_path / "normalized" / "spider1" / name / "oracle"
    assert OracleCopy.read(folder, db.key) == OracleCopy.of(db)


def test_a_missing_or_foreign_file_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"schema.sql is missing: the database's Oracle normalization has not run"):
        OracleCopy.read(tmp_path, "spider1/gone")
    for name, text in (("schema.sql", "\n"), ("constraints.sql", "\n"), ("data.sql", "DELETE FROM T;\n")):
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=r"data.sql: not an INSERT ALL batch: 'DELETE FROM T;'"):
        OracleCopy.read(tmp_path, "spider1/odd")


@pytest.mark.parametrize(
    "stored, text",
    [
        ("EVENT", "SELECT * FROM EVENT"),
        ("EVENT_REPORT", "SELECT * FROM EVENT_REPORT"),  # a result table the setup created unquoted
        ("ORDER", 'SELECT * FROM "ORDER"'),  # reserved: the DDL declares it quoted
        ("LEVEL", 'SELECT * FROM "LEVEL"'),
        ("my table", 'SELECT * FROM "my table"'),
    ],
)
def test_a_tables_state_is_read_by_one_fixed_query_naming_it_as_the_ddl_does(stored, text):
    assert table_query(stored) == text
    assert sqlglot.parse_one(text, read="oracle").sql(dialect="oracle") == text


def test_the_catalog_query_parses():
    assert sqlglot.parse_one(TABLES_QUERY, read="oracle").sql(dialect="oracle") == TABLES_QUERY


def test_a_tables_state_is_its_row_count_and_the_hash_of_its_sorted_rows():
    rows = [(2, None, "b"), (1, 12.5, "a")]
    expected = hashlib.sha256(b"(1, 12.5, 'a')\n(2, None, 'b')").hexdigest()
    assert table_state(rows) == (2, expected)
    assert table_state(list(reversed(rows))) == (2, expected)  # the physical order does not count
    assert table_state([(1, 12.5, "a"), (2, None, "c")])[1] != expected
    assert table_state([]) == (0, hashlib.sha256(b"").hexdigest())


def test_rows_are_keyed_by_the_primary_key_else_by_the_whole_row():
    columns, rows = ["ID", "NAME", "LEVEL"], [(1, "Ann", 3), (2, None, 1)]
    assert keyed_rows(columns, rows, ("ID",)) == [("(1,)", "(1, 'Ann', 3)"), ("(2,)", "(2, None, 1)")]
    assert keyed_rows(columns, rows, ()) == [("(1, 'Ann', 3)", "(1, 'Ann', 3)"), ("(2, None, 1)", "(2, None, 1)")]


# ---- the grader's comparison of two recorded runs (no execution: the runs are written out) --------------


def _trace(per_call: list[tuple[str | None, dict[str, list[tuple]]]]) -> OracleTrace:
    """A run as OracleWorkspace.run records it: per call its error and every table's rows (ID first)."""
    trace = OracleTrace()
    for index, (error, tables) in enumerate(per_call, start=1):
        state = {t: table_state(rows) for t, rows in tables.items()}
        trace.calls.append(CallResult(f"BEGIN sp_x({index}); END;", error, "", (), state))
        trace.rows.append({t: keyed_rows(["ID", "NAME"], rows, ("ID",)) for t, rows in tables.items()})
    return trace


SINGER = [(1, "Ann"), (2, "Bob")]


def test_a_candidate_equal_to_the_reference_passes_every_call():
    reference = _trace([(None, {"SINGER": SINGER})] * 3)
    graded = compared(reference, _trace([(None, {"SINGER": list(reversed(SINGER))})] * 3))
    assert (graded.passed, graded.call_verdicts, graded.detail, graded.category) == (True, ["pass"] * 3, "", None)


def test_the_first_diverging_call_and_table_are_named_with_the_row_difference():
    reference = _trace([(None, {"SINGER": SINGER, "SONG": []})] * 3)
    changed = [(1, "Ann"), (2, "Bo")]
    candidate = _trace(
        [
            (None, {"SINGER": SINGER, "SONG": []}),
            (None, {"SINGER": changed, "SONG": [(9, "x")]}),
            (None, {"SINGER": SINGER, "SONG": []}),
        ]
    )
    graded = compared(reference, candidate)
    assert graded.call_verdicts == ["pass", "fail", "pass"]
    assert graded.detail == "state differs after call 2: table SINGER, 1 row changed"
    assert graded.category == "wrong_logic_or_output"


def test_a_wrong_error_and_a_tampered_table_are_told_apart():
    reference = _trace([("ORA-20001", {"SINGER": SINGER}), (None, {"SINGER": SINGER})])
    silent = compared(reference, _trace([(None, {"SINGER": SINGER}), (None, {"SINGER": SINGER})]))
    assert silent.call_verdicts == ["fail", "pass"]
    assert silent.detail == "call 1: expected error ORA-20001, got no error"
    tampered = _trace([("ORA-20001", {"SINGER": SINGER}), (None, {"SINGER": SINGER})])
    tampered.calls[1] = CallResult("BEGIN sp_x(2); END;", None, "", (), {"SINGER": (-1, TAMPERED)})
    graded = compared(reference, tampered)
    assert graded.detail == "state unreadable after call 2: table SINGER was replaced or hidden"


def test_a_candidate_that_does_not_install_fails_every_call_by_its_code():
    reference = _trace([(None, {"SINGER": SINGER})] * 2)
    broken = OracleTrace(install_error="PLS-00103: line 3, column 1: Encountered the symbol END")
    graded = compared(reference, broken)
    assert graded.call_verdicts == ["fail", "fail"] and graded.category == "invalid_artifact"
    assert graded.detail == "does not install: PLS-00103: line 3, column 1: Encountered the symbol END"


# ---- against a real Oracle server: PostgreSQL's grading cases (tests/test_procedures.py) -------------------


@pytest.fixture(scope="module")
def ora_engine():
    from plbench.engines.oracle import OracleEngine

    engine = OracleEngine.connect(ORACLE_DSN, connect_timeout_s=10, statement_timeout_s=10)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def reserved_built(pg_engine, tmp_path_factory):
    """The reserved-word fixture database's procedures as the build makes them, and its normalized folder."""
    from plbench.procedures.build import database_procedures
    from tests.procedure_fixtures import RESERVED_GOLD, load_fixture

    folder = tmp_path_factory.mktemp("resw-oracle")
    reserved = load_fixture(pg_engine, folder, "resw", RESERVED_SCHEMA, RESERVED_GOLD)
    write_files(reserved.oracle, folder / "normalized")
    return database_procedures(pg_engine, reserved.pg, reserved.oracle, reserved.equivalence), folder / "normalized"


def _oracle_task(v, fixture) -> ProcedureTask:
    calls = tuple(c["call"]["oracle"] for c in v.suite.to_json(v.seed)["calls"])
    setup, reference = tuple(v.seed.setup["oracle"]), v.seed.procedure.render("oracle")
    return ProcedureTask(v.seed.seed_id, OracleCopy.of(fixture.oracle), setup, reference, calls, ())


@needs_oracle
def test_oracle_the_reference_passes_every_call(ora_engine, seeds, fixture):
    v = seeds["procfix/train/3/raise_missing"]
    from plbench.procedures.oracle_grade import _REFERENCE_RUNS

    graded = grade_oracle(ora_engine, _oracle_task(v, fixture), v.seed.procedure.render("oracle"))
    assert graded.passed and graded.call_verdicts == ["pass"] * len(v.suite.expected), graded.detail
    kept = len(_REFERENCE_RUNS[ora_engine])
    assert grade_oracle(ora_engine, _oracle_task(v, fixture), v.seed.procedure.render("oracle")) == graded
    assert len(_REFERENCE_RUNS[ora_engine]) == kept  # the reference ran once for both


@needs_oracle
def test_oracle_touching_another_table_fails_and_names_it(ora_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]
    reference = v.seed.procedure.render("oracle")
    touch = "  UPDATE ORDERS SET STATUS = 'seen' WHERE ORDER_ID = 10;\nEND sp_report_customer;"
    candidate = reference.replace("END sp_report_customer;", touch)
    assert candidate != reference
    graded = grade_oracle(ora_engine, _oracle_task(v, fixture), candidate)
    assert graded.detail == "state differs after call 1: table ORDERS, 1 row changed"
    assert graded.call_verdicts == ["fail"] * 4 and graded.category == "wrong_logic_or_output"


@needs_oracle
def test_oracle_failing_only_call_3_gets_those_verdicts(ora_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]  # calls with 50, 20, 70, 90
    reference = v.seed.procedure.render("oracle")
    candidate = reference.replace(
        "WHERE SCORE > para_score;", "WHERE SCORE > para_score OR (para_score = 70 AND SCORE = 20);"
    )
    assert candidate != reference
    graded = grade_oracle(ora_engine, _oracle_task(v, fixture), candidate)
    assert graded.call_verdicts == ["pass", "pass", "fail", "pass"]
    assert graded.detail == "state differs after call 3: table CUSTOMER_REPORT, 1 row added"


# ---- the validate stage's replay of Oracle references ------------------------------------------------------


def test_each_defined_postgres_error_has_its_oracle_code():
    assert ORACLE_ERROR == {
        "PLB01": "ORA-20001",
        "PLB02": "ORA-20002",
        "PLB03": "ORA-20003",
        "P0001": "ORA-20000",
    }


def _recorded(error, lines, state) -> dict:
    return {"error": error, "lines": lines, "state": {t: [n, "pg-hash"] for t, n in state.items()}}


@pytest.mark.parametrize(
    "error, got_error, lines, counts, detail",
    [
        (None, None, 0, {"SINGER": 2, "SONG": 0}, ""),
        ("PLB01", "ORA-20001", 0, {"SINGER": 2, "SONG": 0}, ""),
        ("23505", "ORA-00001", 0, {"SINGER": 2, "SONG": 0}, ""),  # an undefined error: some error on Oracle
        (
            "PLB01",
            "ORA-20002",
            0,
            {"SINGER": 2, "SONG": 0},
            "call 1: PostgreSQL raised PLB01, expected ORA-20001 on Oracle, got ORA-20002 ()",
        ),
        (
            None,
            "ORA-01476",
            0,
            {"SINGER": 2, "SONG": 0},
            "call 1: PostgreSQL raised nothing, expected no error on Oracle, got ORA-01476 ()",
        ),
        (
            "23505",
            None,
            0,
            {"SINGER": 2, "SONG": 0},
            "call 1: PostgreSQL raised 23505, expected some error on Oracle, got no error",
        ),
        (None, None, 1, {"SINGER": 2, "SONG": 0}, "call 1: 0 output lines on PostgreSQL, 1 on Oracle"),
        (None, None, 0, {"SINGER": 2, "SONG": 1}, "after call 1: table song holds 0 rows on PostgreSQL, 1 on Oracle"),
        (None, None, 0, {"SINGER": 2}, "after call 1: table song holds 0 rows on PostgreSQL, None on Oracle"),
    ],
)
def test_the_replay_compares_what_the_dialects_share(error, got_error, lines, counts, detail):
    """PostgreSQL's recorded call (tables singer, song) against an Oracle run written out (no execution)."""
    recorded = [_recorded(error, [], {"singer": 2, "song": 0})]
    trace = OracleTrace()
    state = {t: (n, "oracle-hash") for t, n in counts.items()}
    trace.calls.append(CallResult("BEGIN sp_x(1); END;", got_error, "", ("x",) * lines, state))
    assert first_difference(recorded, trace) == detail


def test_two_runs_that_differ_name_the_first_call_they_differ_in():
    first = _trace([(None, {"SINGER": SINGER})] * 3)
    assert unstable(first, _trace([(None, {"SINGER": list(reversed(SINGER))})] * 3)) == ""
    second = _trace([(None, {"SINGER": SINGER}), (None, {"SINGER": SINGER[:1]}), (None, {"SINGER": SINGER})])
    assert unstable(first, second) == "not deterministic on Oracle: call 2 differs between two fresh runs"
    broken = OracleTrace(install_error="ORA-04021: timeout occurred while waiting to lock object")
    assert unstable(first, broken) == (
        "the reference installed once, then not: ORA-04021: timeout occurred while waiting to lock object"
    )


def test_the_normalized_oracle_files_of_a_database_are_found_where_the_build_writes_them(tmp_path):
    db = _oracle_db(tmp_path, "resw", RESERVED_SCHEMA)
    write_files(db, tmp_path / "normalized")
    assert (database_folder(tmp_path / "normalized", "resw") / "schema.sql").is_file()


@needs_oracle
def test_oracle_the_validate_stage_replays_every_oracle_reference(pg_engine, ora_engine, reserved_built):
    from plbench.config import BuildConfig
    from tests.procedure_fixtures import subset_part

    built, normalized = reserved_built
    config = BuildConfig(normalized_dir=normalized)
    part = subset_part(pg_engine, "resw", built, engines={"oracle": ora_engine}, config=config)
    oracle = [r for r in part.rows if r.key[1] == "oracle"]
    replay = part.validation["oracle"]["replay"]
    assert replay == {"ran": True, "engine": ora_engine.version(), "passed": len(oracle), "failed": 0}, [
        r.detail for r in part.rejections if r.reason_code == "failed"
    ][:3]
    assert oracle and {(r.replay_status, r.replay_engine) for r in oracle} == {("passed", ora_engine.version())}


# ---- plbench evaluate on Oracle procedure rows -------------------------------------------------------------


def _oracle_row(database: str) -> dict:
    suite = {"calls": [{"error": None, "lines": [], "state": {}}], "initial_state": {}}
    return {
        "task_id": "procedures/a1/x",
        "subset": "procedures",
        "dialect": "oracle",
        "database": database,
        "scenario": "a1",
        "materials": "{}",
        "setup_sql": "[]",
        "reference_code": "CREATE OR REPLACE PROCEDURE sp_x\nIS\nBEGIN\n  NULL;\nEND sp_x;",
        "test_cases": '["BEGIN sp_x; END;"]',
        "call_suite": json.dumps(suite),
    }


def test_an_oracle_row_whose_database_files_are_missing_is_not_run_with_the_reason():
    """Refused before any session: the engine is made, never connected (there is no server here)."""
    from plbench.engines.oracle import OracleEngine, parse_dsn
    from plbench.grading.procedures import grade_procedure

    engine = OracleEngine(parse_dsn("u/p@127.0.0.1:9/none"))
    (case,) = grade_procedure(
        engine, _oracle_row("no_such_database"), "CREATE OR REPLACE PROCEDURE sp_x IS BEGIN NULL; END;"
    )
    assert case["verdict"] == "NOT_RUN" and case["category"] == "reference_error"
    assert case["detail"].endswith(
        "spider1/no_such_database/oracle/schema.sql is missing: the database's Oracle normalization has not run"
    )


@needs_oracle
def test_oracle_evaluate_grades_a_released_oracle_row_on_a_copy(ora_engine, reserved_built):
    from plbench.procedures.rows import grade_copied, task_row
    from plbench.taskrow import as_record

    built, normalized = reserved_built
    task = next(t for t in built.tasks if t.dialect == "oracle" and t.scenario == "a1")
    row = as_record(task_row(task, None))
    assert grade_copied(ora_engine, row, row["reference_code"], normalized).passed
    assert not grade_copied(ora_engine, row, "CREATE OR REPLACE PROCEDURE", normalized).passed
