"""Spider gold queries: readers, each rewrite rule, result comparison, and equivalence on a real PostgreSQL."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest
import sqlglot

from plbench.normalize.emit import normalize
from plbench.normalize.load import load_postgres
from plbench.normalize.sqlite_source import read_sqlite
from plbench.spider import gold
from plbench.spider.spider2_tasks import transpile_gold

SCHEMA = """
CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Age INTEGER, Country TEXT, Net_Worth REAL,
                     Birth DATE, "Home Town" TEXT);
CREATE TABLE concert (id INTEGER PRIMARY KEY, singer_id TEXT REFERENCES singer(Singer_ID), Year TEXT,
                      title TEXT, "order" INTEGER, Start DATETIME);
"""
SINGERS = [
    (1, "Joe Sharp", 52, "Netherlands", 30.1, "1950-01-02", "Zurich"),
    (2, "Timbaland", 32, "United States", 32.7, "1972-03-10", "Norfolk"),
    (3, "O'Brien", None, "", 5.5, None, "zagreb"),
    (4, 'Zoë "Z" Ünal', 32, "France", 0.1, "1990-05-06", "İstanbul"),
    (5, "ann", 41, "France", None, "1961-12-31", None),
    (6, "Beyoncé", 32, None, 0.2, "1981-09-04", "Houston"),
]
CONCERTS = [
    (1, "1", "2014", "Summer", 1, "2014-06-01 20:00:00"),
    (2, "2", "2015", "Autumn", 2, "2015-09-30 19:30:00"),
    (3, "2", "2014", "Winter", None, None),
    (4, "9", "2016", "Spring", 3, "2016-03-01 18:00:00"),  # references no singer
]


def _build(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO singer VALUES (?, ?, ?, ?, ?, ?, ?)", SINGERS)
    conn.executemany("INSERT INTO concert VALUES (?, ?, ?, ?, ?, ?)", CONCERTS)
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(sqlite path, PostgreSQL-normalized database, Oracle-normalized database)."""
    path = _build(tmp_path_factory.mktemp("gold") / "tiny.sqlite")
    pg = normalize(read_sqlite(path, "spider1", "gold_tiny", "tiny.sqlite"), "postgres")
    return path, pg, gold.oracle_names(pg)


# ---- readers ---------------------------------------------------------------------------------


def test_read_spider_dev_pairs_questions_with_gold_lines(tmp_path):
    (tmp_path / "dev.json").write_text('[{"db_id": "a", "question": "How many?"}, {"db_id": "b", "question": "Q2"}]')
    (tmp_path / "dev_gold.sql").write_text("SELECT count(*) FROM t\ta\nSELECT x FROM u\tb\n")
    queries = gold.read_spider_dev(tmp_path / "dev.json", tmp_path / "dev_gold.sql")
    assert queries == [
        gold.GoldQuery("0", "a", "How many?", "SELECT count(*) FROM t", "dev"),
        gold.GoldQuery("1", "b", "Q2", "SELECT x FROM u", "dev"),
    ]


def test_read_spider_dev_rejects_a_db_mismatch(tmp_path):
    (tmp_path / "dev.json").write_text('[{"db_id": "a", "question": "Q"}]')
    (tmp_path / "dev_gold.sql").write_text("SELECT 1\tb\n")
    with pytest.raises(gold.GoldFormatError, match="dev_gold.sql:1"):
        gold.read_spider_dev(tmp_path / "dev.json", tmp_path / "dev_gold.sql")


def test_read_train_gold_numbers_lines_and_names_a_malformed_one(tmp_path):
    path = tmp_path / "train_gold.sql"
    path.write_text("SELECT 1\tdb1\n\nSELECT 2\tdb2\n")
    assert [(q.source_id, q.db_id, q.sql, q.split) for q in gold.read_train_gold(path)] == [
        ("1", "db1", "SELECT 1", "train"),
        ("3", "db2", "SELECT 2", "train"),
    ]
    path.write_text("SELECT 1\tdb1\nSELECT 2 without a database\n")
    with pytest.raises(gold.GoldFormatError, match=r"train_gold\.sql:2"):
        gold.read_train_gold(path)


# ---- rewrite rules, one by one (exact output) ------------------------------------------------

RULE_CASES = [
    (
        "double_quoted_strings",
        'SELECT Name FROM singer WHERE Country = "France" AND "Name" = "x"',
        "SELECT Name FROM singer WHERE Country = 'France' AND \"Name\" = 'x'",
        "SELECT Name FROM singer WHERE Country = 'France' AND \"Name\" = 'x'",
    ),
    (
        "bare_columns",
        "SELECT Name, max(Age) FROM singer",
        "SELECT (ARRAY_AGG(Name ORDER BY Age DESC NULLS LAST, singer.ctid))[1], MAX(Age) FROM singer",
        "SELECT MAX(Name) KEEP (DENSE_RANK FIRST ORDER BY Age DESC NULLS LAST, singer.ROWID), MAX(Age) FROM singer",
    ),
    (
        "bare_columns",
        "SELECT T2.Name, count(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID "
        "GROUP BY T1.singer_id",
        "SELECT MIN(T2.Name), COUNT(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID "
        "GROUP BY T1.singer_id",
        "SELECT MIN(T2.Name), COUNT(*) FROM concert T1 JOIN singer T2 ON T1.singer_id = T2.Singer_ID "
        "GROUP BY T1.singer_id",
    ),
    (
        "bare_columns",  # a join: ties broken by the row ids of its tables, in SQLite's loop order
        "SELECT T2.Name, min(T1.Year) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID",
        "SELECT (ARRAY_AGG(T2.Name ORDER BY T1.Year ASC, T1.ctid, T2.ctid))[1], MIN(T1.Year) "
        "FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID",
        "SELECT MAX(T2.Name) KEEP (DENSE_RANK FIRST ORDER BY T1.Year ASC, T1.ROWID, T2.ROWID), "
        "MIN(T1.Year) FROM concert T1 JOIN singer T2 ON T1.singer_id = T2.Singer_ID",
    ),
    (
        "text_affinity_comparison",
        "SELECT title FROM concert WHERE Year = 2014 OR Year IN (2015, 2016.5)",
        "SELECT title FROM concert WHERE Year = '2014' OR Year IN ('2015', '2016.5')",
        "SELECT title FROM concert WHERE Year = '2014' OR Year IN ('2015', '2016.5')",
    ),
    (
        "text_affinity_comparison",
        "SELECT Name FROM singer WHERE Age > '30' AND Age BETWEEN '1' AND '99'",
        "SELECT Name FROM singer WHERE Age > 30 AND Age BETWEEN 1 AND 99",
        "SELECT Name FROM singer WHERE Age > 30 AND Age BETWEEN 1 AND 99",
    ),
    (
        "text_affinity_comparison",
        "SELECT Name FROM singer WHERE Age = 'null' OR Age < 'abc' OR 'x' < Age",
        "SELECT Name FROM singer WHERE Age <> Age OR Age = Age OR Age <> Age",
        "SELECT Name FROM singer WHERE Age <> Age OR Age = Age OR Age <> Age",
    ),
    (
        "text_affinity_comparison",
        "SELECT title FROM concert WHERE Start > '2015-06' AND Start < '2016' AND Year < 2016",
        "SELECT title FROM concert WHERE CAST(Start AS TEXT) > '2015-06' AND Start <> Start AND Year < '2016'",
        "SELECT title FROM concert WHERE TO_CHAR(Start, 'YYYY-MM-DD HH24:MI:SS') > '2015-06' AND Start <> Start "
        "AND Year < '2016'",
    ),
    (
        "mixed_affinity_comparison",
        "SELECT Name FROM singer WHERE Singer_ID NOT IN (SELECT singer_id FROM concert)",
        "SELECT Name FROM singer WHERE NOT CAST(Singer_ID AS TEXT) IN (SELECT singer_id FROM concert)",
        "SELECT Name FROM singer WHERE NOT CAST(Singer_ID AS VARCHAR2(4000)) IN (SELECT singer_id FROM concert)",
    ),
    (
        "mixed_affinity_comparison",
        "SELECT T1.title FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID",
        "SELECT T1.title FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = CAST(T2.Singer_ID AS TEXT)",
        "SELECT T1.title FROM concert T1 JOIN singer T2 ON T1.singer_id = CAST(T2.Singer_ID AS VARCHAR2(4000))",
    ),
    (
        "text_arithmetic",
        "SELECT avg(Year) FROM concert",
        "SELECT AVG(CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(Year AS TEXT), "
        r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END) "
        "FROM concert",
        "SELECT AVG(CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(Year), "
        r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS DOUBLE PRECISION), 0) END) FROM concert",
    ),
    (
        "text_arithmetic",
        "SELECT Year - 1 FROM concert",
        "SELECT CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(Year AS TEXT), "
        r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END - 1 "
        "FROM concert",
        "SELECT CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(Year), "
        r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS DOUBLE PRECISION), 0) END - 1 FROM concert",
    ),
    (
        "text_arithmetic",  # the operands inside an aggregate's argument are rewritten, the argument is not
        "SELECT avg(Year - singer_id) FROM concert",
        "SELECT AVG(CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(Year AS TEXT), "
        r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END - "
        "CASE WHEN singer_id IS NULL THEN NULL ELSE COALESCE(CAST((REGEXP_MATCH(CAST(singer_id AS TEXT), "
        r"'^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)'))[1] AS DOUBLE PRECISION), 0) END) "
        "FROM concert",
        "SELECT AVG(CASE WHEN Year IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(Year), "
        r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS DOUBLE PRECISION), 0) END - "
        "CASE WHEN singer_id IS NULL THEN NULL ELSE COALESCE(CAST(REGEXP_SUBSTR(TO_CHAR(singer_id), "
        r"'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?') AS DOUBLE PRECISION), 0) END) FROM concert",
    ),
    (
        "like_case_insensitive",
        "SELECT Name FROM singer WHERE Name LIKE '%an%' OR Age NOT LIKE '3%'",
        "SELECT Name FROM singer WHERE Name ILIKE '%an%' OR NOT CAST(Age AS TEXT) ILIKE '3%'",
        "SELECT Name FROM singer WHERE UPPER(Name) LIKE UPPER('%an%') OR NOT UPPER(CAST(Age AS VARCHAR2(4000))) "
        "LIKE UPPER('3%')",
    ),
    (
        "like_case_insensitive",
        "SELECT Name FROM singer WHERE Name LIKE 'ZOË%'",
        "SELECT Name FROM singer WHERE TRANSLATE(Name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') "
        "LIKE TRANSLATE('ZOË%', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')",
        "SELECT Name FROM singer WHERE TRANSLATE(Name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') "
        "LIKE TRANSLATE('ZOË%', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')",
    ),
    (
        "integer_division",
        "SELECT Age / 3, Net_Worth / 2 FROM singer",
        "SELECT Age / NULLIF(3, 0), Net_Worth / NULLIF(2, 0) FROM singer",
        "SELECT TRUNC(Age / NULLIF(3, 0)), Net_Worth / NULLIF(2, 0) FROM singer",
    ),
    (
        "cross_join",
        "SELECT T1.Name FROM singer AS T1 JOIN concert AS T2",
        "SELECT T1.Name FROM singer AS T1 CROSS JOIN concert AS T2",
        "SELECT T1.Name FROM singer T1 CROSS JOIN concert T2",
    ),
    (
        "sqlite_tie_order",
        "SELECT Name FROM singer ORDER BY Age DESC LIMIT 2",
        "SELECT Name FROM singer ORDER BY Age DESC NULLS LAST, singer.ctid NULLS FIRST LIMIT 2",
        "SELECT Name FROM singer ORDER BY Age DESC NULLS LAST, singer.ROWID NULLS FIRST FETCH FIRST 2 ROWS ONLY",
    ),
    (
        "sqlite_tie_order",
        "SELECT Country FROM singer GROUP BY Country ORDER BY count(*) DESC LIMIT 1",
        "SELECT Country FROM singer GROUP BY Country ORDER BY COUNT(*) DESC NULLS LAST, Country DESC NULLS LAST "
        "LIMIT 1",
        "SELECT Country FROM singer GROUP BY Country ORDER BY COUNT(*) DESC NULLS LAST, Country DESC NULLS LAST "
        "FETCH FIRST 1 ROWS ONLY",
    ),
    (
        "names",
        'SELECT "Home Town", singer.Name, T."order" FROM Singer JOIN concert AS T ON T.singer_id = singer.Singer_ID',
        'SELECT "home town", singer.name, T."order" FROM singer JOIN concert AS T ON T.singer_id = singer.singer_id',
        'SELECT "HOME TOWN", SINGER.NAME, T."ORDER" FROM SINGER JOIN CONCERT T ON T.SINGER_ID = SINGER.SINGER_ID',
    ),
]


@pytest.mark.parametrize(
    ("rule", "sql", "postgres", "oracle"), RULE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(RULE_CASES)]
)
def test_rule_exact_output(tiny, rule, sql, postgres, oracle):
    _, pg, ora = tiny
    assert gold.apply_rule(rule, sql, pg, "postgres") == postgres
    assert gold.apply_rule(rule, sql, ora, "oracle") == oracle


def test_every_rule_has_an_exact_output_case():
    assert {name for name, _ in gold.RULES} - {"sqlite_only_syntax"} == {c[0] for c in RULE_CASES}


def test_tie_order_follows_sqlites_group_plan(tiny):
    """Groups read from an index come out ascending whatever the ORDER BY direction."""
    _, pg, _ = tiny
    sql = "SELECT Country FROM singer GROUP BY Country ORDER BY count(*) DESC LIMIT 1"
    assert gold.apply_rule("sqlite_tie_order", sql, pg, "postgres", plan=["SCAN singer USING INDEX i"]) == (
        "SELECT Country FROM singer GROUP BY Country ORDER BY COUNT(*) DESC NULLS LAST, Country ASC NULLS FIRST LIMIT 1"
    )


def test_sqlite_only_syntax_is_a_transpile_error(tiny):
    _, pg, _ = tiny
    with pytest.raises(gold.TranspileError, match="GLOB"):
        gold.transpile("SELECT Name FROM singer WHERE Name GLOB 'J*'", pg)
    with pytest.raises(gold.TranspileError, match="INDEXED BY"):
        gold.transpile("SELECT Name FROM singer INDEXED BY idx", pg)
    with pytest.raises(gold.TranspileError, match="one statement"):
        gold.transpile("SELECT 1; SELECT 2", pg)


def test_full_transpile_maps_names_and_parses_in_oracle(tiny):
    _, pg, ora = tiny
    sql = (
        "SELECT T2.Name, count(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID "
        'WHERE T2.Country = "France" GROUP BY T1.singer_id'
    )
    assert gold.transpile(sql, pg) == (
        "SELECT MIN(T2.name), COUNT(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = "
        "CAST(T2.singer_id AS TEXT) WHERE T2.country = 'France' GROUP BY T1.singer_id"
    )
    oracle = gold.transpile(sql, ora, "oracle")
    assert "SINGER T2" in oracle and "'France'" in oracle
    assert sqlglot.parse_one(oracle, read="oracle") is not None


def test_oracle_writes_except_as_minus_and_quotes_a_name_oracle_does_not_take_unquoted(tiny):
    """Oracle 19c has no EXCEPT, and an unquoted name cannot start with `_`
    (plbench.dialects.oracle_sqlglot.PlbenchOracle): MINUS, and the name folded and quoted as the
    normalized schema spells such names."""
    _, pg, ora = tiny
    minus = "SELECT Name FROM singer EXCEPT SELECT Name FROM singer WHERE Age > 40"
    oracle_minus = "SELECT NAME FROM SINGER MINUS SELECT NAME FROM SINGER WHERE AGE > 40"
    assert gold.transpile(minus, ora, "oracle") == oracle_minus
    assert gold.transpile(minus, pg) == "SELECT name FROM singer EXCEPT SELECT name FROM singer WHERE age > 40"
    total = "SELECT Country, sum(Age) AS _sum FROM singer GROUP BY Country ORDER BY _sum"
    assert gold.transpile(total, ora, "oracle") == (
        'SELECT COUNTRY, SUM(AGE) AS "_SUM" FROM SINGER GROUP BY COUNTRY ORDER BY "_SUM" NULLS FIRST, '
        "COUNTRY ASC NULLS FIRST"
    )
    assert gold.transpile(total, pg).startswith("SELECT country, SUM(age) AS _sum FROM singer")
    # Every Oracle transpile goes through the same sqlglot dialect: the Spider 2.0 path too.
    tree = sqlglot.parse_one("SELECT a AS _x FROM t EXCEPT DISTINCT SELECT a FROM u", read="bigquery")
    assert transpile_gold(tree, "oracle", ora) == ('SELECT a AS "_X" FROM t MINUS SELECT a FROM u', "")


def test_has_outer_order():
    assert gold.has_outer_order("SELECT a FROM t ORDER BY a")
    assert not gold.has_outer_order("SELECT a FROM t WHERE a IN (SELECT b FROM u ORDER BY b LIMIT 1)")
    assert gold.has_outer_order("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1")


# ---- compare ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "ordered", "equal"),
    [
        ([(1.0,)], [(decimal.Decimal("1.0000001"),)], False, True),  # within rel 1e-6
        ([(1.0,)], [(decimal.Decimal("1.01"),)], False, False),
        ([(0.30000000000000004,)], [(0.3,)], False, True),
        ([(1e-12,)], [(0.0,)], False, True),  # absolute tolerance near zero
        ([(3,)], [(decimal.Decimal("3"),)], False, True),
        ([("2020-01-02",)], [(dt.date(2020, 1, 2),)], False, True),
        ([("2020-01-02 03:04:05",)], [(dt.datetime(2020, 1, 2, 3, 4, 5),)], False, True),
        ([(1,), (0,)], [(True,), (False,)], False, True),
        ([(None,)], [(None,)], False, True),
        ([(None,)], [("",)], False, False),
        ([("5",)], [(5,)], False, True),  # a column one side returns as text, the other as a number
        ([("5",)], [("5.0",)], False, False),  # both text: compared as text
        ([(1,), (2,)], [(2,), (1,)], False, True),
        ([(1,), (2,)], [(2,), (1,)], True, False),
        ([("a",), ("a",), ("b",)], [("a",), ("b",), ("b",)], False, False),  # multisets, not sets
        ([(1, "x")], [(1, "x"), (1, "x")], False, False),
        ([], [], True, True),
    ],
)
def test_compare(source, target, ordered, equal):
    assert gold.compare(source, target, ordered).equal is equal


def test_compare_diff_is_short_and_says_what_differs():
    diff = gold.compare([(i,) for i in range(100)], [(i,) for i in range(1, 101)], False).diff
    assert "100 vs 100 rows" in diff and "(0,)" in diff and "(100,)" in diff and len(diff) < 300
    assert "different order: row 0" in gold.compare([(1,), (2,)], [(2,), (1,)], True).diff


# ---- end to end on a real PostgreSQL ---------------------------------------------------------

E2E = [
    ("identical", "SELECT count(*) FROM singer"),
    ("identical", 'SELECT Name, Country FROM singer WHERE Country = "France" ORDER BY Name'),
    ("identical", "SELECT Name FROM singer ORDER BY Age"),  # NULL first, then ties in rowid order
    ("identical", "SELECT Name FROM singer ORDER BY Age DESC LIMIT 2"),
    ("identical", "SELECT Name, max(Age) FROM singer"),
    (
        "identical",
        "SELECT T2.Name, count(*) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID "
        "GROUP BY T1.singer_id",
    ),
    ("identical", "SELECT title FROM concert WHERE Year = 2014 ORDER BY title"),
    ("identical", "SELECT Name FROM singer WHERE Name LIKE '%o''b%' OR Name LIKE 'ZOË%' OR Name LIKE 'zoë%'"),
    ("identical", "SELECT avg(Net_Worth), sum(Net_Worth), min(Net_Worth) FROM singer"),
    ("identical", "SELECT Name, Birth FROM singer WHERE Birth > '1960-01-01'"),
    ("identical", "SELECT Country, count(*) FROM singer GROUP BY Country ORDER BY count(*) DESC"),
    ("identical", "SELECT Name FROM singer WHERE Singer_ID NOT IN (SELECT singer_id FROM concert)"),
    (
        "identical",
        "SELECT avg(Year), Age / 10 FROM concert JOIN singer ON concert.singer_id = singer.Singer_ID GROUP BY Age",
    ),
    ("identical", 'SELECT "Home Town" FROM singer WHERE "Home Town" LIKE \'z%\''),
    ("identical", "SELECT title, Start FROM concert WHERE Start < '2015-12-31' ORDER BY Start"),
    ("identical", "SELECT Name FROM singer WHERE Age <> 'unknown' AND Birth > '1970' AND Country LIKE 'f%'"),
    (
        "identical",
        "SELECT T1.Name FROM singer AS T1 WHERE T1.Singer_ID IN (SELECT T1.Singer_ID FROM concert AS T2 "
        "GROUP BY T2.Year)",
    ),  # an outer reference in a grouped subquery is not a bare column
    ("identical", "SELECT avg(Year - singer_id), sum(Year) + sum(singer_id) FROM concert"),  # rewrites compose
    (
        "identical",  # tied on min(Year): SQLite takes the first row of its loops (concert 1, Joe Sharp)
        "SELECT T2.Name, min(T1.Year) FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.Singer_ID",
    ),
    ("source_error", "SELECT nosuch FROM singer"),
    ("transpile_error", "SELECT Name FROM singer WHERE Name GLOB 'J*'"),
    ("runtime_error", "SELECT abs(Name) FROM singer"),  # SQLite reads text as 0; PostgreSQL has no abs(text)
    ("result_mismatch", "SELECT substr(Name, -3) FROM singer"),  # SQLite counts a negative start from the end
]


@pytest.fixture(scope="module")
def e2e_results(tiny, pg_engine):
    path, pg, ora = tiny
    with pg_engine.connection() as conn:
        report = load_postgres(conn, pg)
    assert report.verified, report.error or report.mismatches()
    queries = [gold.GoldQuery(str(i), "gold_tiny", "", sql, "dev") for i, (_, sql) in enumerate(E2E)]
    with pg_engine.session(reads=(pg.schema_name,)) as session:
        return gold.check_database(path, pg, queries, session, ora)


@pytest.mark.parametrize("index", range(len(E2E)), ids=[f"{c}-{i}" for i, (c, _) in enumerate(E2E)])
def test_end_to_end_class(e2e_results, index):
    result = e2e_results[index]
    assert result.cls == E2E[index][0], (result.postgres_sql, result.detail)


def test_end_to_end_details(e2e_results):
    by_class = defaultdict(list)
    for r in e2e_results:
        by_class[r.cls].append(r)
    assert [r.sqlstate for r in by_class["runtime_error"]] == ["42883"]
    assert "GLOB" in by_class["transpile_error"][0].detail
    assert "no such column" in by_class["source_error"][0].detail
    assert "only in source" in by_class["result_mismatch"][0].detail
    for r in e2e_results:
        if r.cls != "transpile_error":
            assert r.postgres_sql and r.oracle_sql and not r.oracle_error
            assert sqlglot.parse_one(r.oracle_sql, read="oracle") is not None
    assert gold.summarize(e2e_results) == {
        "total": len(E2E),
        "identical": 19,
        "mismatch": {"source_error": 1, "transpile_error": 1, "runtime_error": 1, "result_mismatch": 1},
    }


class _CountingSession:
    """A real session, counting the queries sent through it."""

    def __init__(self, session):
        self.session, self.sent = session, []

    def query(self, text):
        self.sent.append(text)
        return self.session.query(text)


def test_a_repeated_gold_text_runs_once_and_is_reported_for_each_question(tiny, pg_engine):
    path, pg, ora = tiny
    texts = [E2E[0][1], E2E[-2][1], E2E[0][1], E2E[-2][1], E2E[0][1]]  # identical, runtime_error, repeated
    queries = [gold.GoldQuery(str(i), "gold_tiny", f"question {i}", sql, "train") for i, sql in enumerate(texts)]
    with pg_engine.connection() as conn:
        assert load_postgres(conn, pg).verified
    with pg_engine.session(reads=(pg.schema_name,)) as session:
        counting = _CountingSession(session)
        results = gold.check_database(path, pg, queries, counting, ora)
    assert len(counting.sent) == 2
    assert [r.query for r in results] == queries
    assert [r.cls for r in results] == ["identical", "runtime_error", "identical", "runtime_error", "identical"]
    for first, again in ((results[0], results[2]), (results[1], results[3]), (results[0], results[4])):
        assert {**first.as_row(), "source_id": ""} == {**again.as_row(), "source_id": ""}
        assert first.texts is not again.texts and first.untranslated is not again.untranslated


def test_min_max_on_a_join_takes_sqlites_first_tied_row(tmp_path, pg_engine):
    """40 awards tie on min(year): SQLite takes the person of the first row its loops meet (its plan
    scans award, then looks the person up); PostgreSQL merge-joins in person order, so without a
    tiebreak its first tied row is person 1's."""
    path = tmp_path / "awards.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE award (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(id), year INTEGER);"
    )
    conn.executemany("INSERT INTO person VALUES (?, ?)", [(i, f"p{i:03d}") for i in range(1, 201)])
    conn.executemany("INSERT INTO award VALUES (?, ?, ?)", [(i, 41 - i, 2000) for i in range(1, 41)])
    conn.commit()
    sql = "SELECT T1.name, min(T2.year) FROM person AS T1 JOIN award AS T2 ON T1.id = T2.person_id"
    assert conn.execute(sql).fetchall() == [("p040", 2000)]
    conn.close()
    pg = normalize(read_sqlite(path, "spider1", "gold_awards", "awards.sqlite"), "postgres")
    with pg_engine.connection() as pg_conn:
        assert load_postgres(pg_conn, pg).verified
        # statistics make PostgreSQL merge-join in person order
        pg_conn.execute(f"ANALYZE {pg.schema_name}.person; ANALYZE {pg.schema_name}.award")
    with pg_engine.session(reads=(pg.schema_name,)) as session:
        [result] = gold.check_database(path, pg, [gold.GoldQuery("0", "gold_awards", "", sql, "dev")], session)
    assert result.cls == "identical", (result.postgres_sql, result.detail)
    assert "T2.ctid, T1.ctid" in result.postgres_sql  # award's loop is the outer one in SQLite's plan


# ---- the full mirror -------------------------------------------------------------------------

RAW = os.environ.get("PLBENCH_RAW_DIR")


@pytest.mark.mirror
@pytest.mark.skipif(not RAW, reason="PLBENCH_RAW_DIR is not set: the full raw mirror is not available")
def test_dev_gold_equivalence_on_the_mirror(pg_engine):
    spider = Path(RAW) / "spider"
    by_db = defaultdict(list)
    for q in gold.read_spider_dev(spider / "dev.json", spider / "dev_gold.sql"):
        by_db[q.db_id].append(q)
    results = []
    for db_id, queries in sorted(by_db.items()):
        path = spider / "database" / db_id / f"{db_id}.sqlite"
        if not path.exists():
            continue
        pg = normalize(read_sqlite(path, "spider1", db_id, str(path)), "postgres")
        with pg_engine.connection() as conn:
            assert load_postgres(conn, pg).verified
        with pg_engine.session(reads=(pg.schema_name,)) as session:
            results += gold.check_database(path, pg, queries, session)
    summary = gold.summarize(results)
    assert summary["total"] == 972
    assert summary["identical"] / summary["total"] >= 0.99, summary
