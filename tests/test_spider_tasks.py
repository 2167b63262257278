"""Spider-PLSQL pieces: the output rule in Python and in both dialects' SQL, reference blocks, prompts."""

import datetime as dt
import decimal

import pytest
import sqlglot

from plbench.dialects.static_checks import check_block_structure
from plbench.spider.output_format import field_expression, format_row, format_value, type_class
from plbench.spider.tasks import (
    ReferenceOutput,
    alias_outputs,
    outputs_match,
    prompt,
    reference_block,
)


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "NULL"),
        (7, "7"),
        (-12345678901234567890, "-12345678901234567890"),
        (2.5, "2.5"),
        (3.0, "3"),
        (1 / 3, "0.3333"),
        (2 / 3, "0.6667"),
        (0.00004, "0"),
        (-0.00004, "0"),
        (0.00005, "0.0001"),
        (decimal.Decimal("2.50000"), "2.5"),
        (1e20, "100000000000000000000"),
        (True, "true"),
        ("a, b", "a, b"),
        (dt.date(2020, 1, 5), "2020-01-05"),
        (dt.datetime(2022, 3, 1, 9, 0), "2022-03-01 09:00:00"),
        (b"\x00\xff", "00ff"),
    ],
)
def test_the_output_rule_in_python(value, text):
    assert format_value(value) == text


def test_rows_join_their_fields_with_commas():
    assert format_row((1, None, "x")) == "1,NULL,x"


@pytest.mark.parametrize(
    "value, pg_type, text",
    [
        ("2.5::float8", "float8", "2.5"),
        ("3.0::float8", "float8", "3"),
        ("(1.0/3)::numeric", "numeric", "0.3333"),
        ("0.00005::numeric", "numeric", "0.0001"),
        ("-0.00004::float8", "float8", "0"),
        ("42::int8", "int8", "42"),
        ("NULL::int4", "int4", "NULL"),
        ("DATE '2020-01-05'", "date", "2020-01-05"),
        ("TIMESTAMP '2022-03-01 09:00:00'", "timestamp", "2022-03-01 09:00:00"),
        ("'x'::text", "text", "x"),
        ("'\\x00ff'::bytea", "bytea", "00ff"),
    ],
)
def test_the_postgres_expression_prints_what_python_prints(pg_engine, value, pg_type, text):
    with pg_engine.session() as session:
        result = session.query(f"SELECT {field_expression('postgres', value, type_class(pg_type))}")
    assert result.ok and result.rows == [(text,)]


def test_a_postgres_reference_block_prints_each_row_in_order(pg_engine):
    query = "SELECT n, n / 3.0, CASE WHEN n = 2 THEN NULL ELSE 'v' || n END FROM generate_series(1, 3) AS n ORDER BY n"
    block = reference_block("postgres", query, ["integer", "number", "text"])
    with pg_engine.session() as session:
        printed = session.execute(block)
    assert printed.ok and printed.lines == ["1,0.3333,v1", "2,0.6667,NULL", "3,1,v3"]
    assert outputs_match(ReferenceOutput(("1,0.3333,v1", "2,0.6667,NULL", "3,1,v3"), True), printed.lines)
    assert not outputs_match(ReferenceOutput(("2,0.6667,NULL", "1,0.3333,v1", "3,1,v3"), True), printed.lines)
    assert outputs_match(ReferenceOutput(("2,0.6667,NULL", "1,0.3333,v1", "3,1,v3"), False), printed.lines)


def test_oracle_outputs_are_renamed_and_order_by_follows_the_alias():
    aliased, n = alias_outputs("SELECT name AS who, COUNT(*) FROM t GROUP BY name ORDER BY who DESC", "oracle")
    assert n == 2 and aliased == "SELECT name AS C1, COUNT(*) AS C2 FROM t GROUP BY name ORDER BY C1 DESC"
    block = reference_block("oracle", "SELECT name, AVG(x) FROM t GROUP BY name", ["text", "number"])
    assert check_block_structure(block) == [] and block.endswith("END;\n/")
    assert "DBMS_OUTPUT.PUT_LINE(NVL(TO_CHAR(r.C1), 'NULL') || ',' || NVL(RTRIM(TO_CHAR(ROUND(r.C2, 4)" in block
    loop_query = block.split("FOR r IN (\n", 1)[1].split("\n  ) LOOP", 1)[0]
    sqlglot.parse_one(loop_query, read="oracle")  # the cursor's query parses as Oracle


def test_the_prompt_keeps_the_question_and_states_the_output_rule():
    text = prompt("How many singers?", "concert_singer", "oracle", "CREATE TABLE SINGER (ID NUMBER(19));", False)
    assert text.startswith("Database `concert_singer` (Oracle)") and "How many singers?" in text
    assert "DBMS_OUTPUT.PUT_LINE" in text and "CREATE TABLE SINGER" in text and "does not matter" in text
    assert "RAISE NOTICE" in prompt("Q?", "db", "postgres", "", True)
