"""`plbench normalize --sqlite`: a user's own SQLite database in both dialects, loaded into a real
PostgreSQL and verified, the user's queries checked for equivalence; bad input refused by name."""

import json
import sqlite3

import pytest

from pipelines.cli import main

QUERIES = [
    {"query": "SELECT name FROM customer WHERE city = 'Oslo' ORDER BY name"},
    {"query": "SELECT c.name, count(*) FROM customer c JOIN orders o ON o.customer_id = c.id GROUP BY c.name"},
]


@pytest.fixture
def shop(tmp_path, pg_engine, monkeypatch):
    monkeypatch.setenv("PLBENCH_PG_DSN", pg_engine._dsn)
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), total REAL);"
        "INSERT INTO customer VALUES (1, 'Ada', 'Oslo'), (2, 'Bo', 'Oslo'), (3, 'Cy', 'Rome');"
        "INSERT INTO orders VALUES (1, 1, 9.5), (2, 1, 3.0), (3, 3, 7.25);"
    )
    conn.commit()
    conn.close()
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps(QUERIES))
    return path, queries, tmp_path / "out"


def test_a_database_is_normalized_loaded_verified_and_its_queries_checked(shop, pg_engine, capsys):
    path, queries, out = shop
    assert main(["normalize", "--sqlite", str(path), "--queries", str(queries), "--out", str(out)]) == 0
    report = json.loads((out / "own" / "shop" / "report.json").read_text())
    assert report["gold_equivalence"] == {"total": 2, "identical": 2, "mismatch": {}}
    assert report["load"]["loaded"] and report["load"]["verified"] and report["load"]["mismatches"] == []
    assert report["tables"] == 2 and report["rows"] == 6 and report["oracle_static_problems"] == []
    for dialect in ("postgres", "oracle"):
        assert "CREATE TABLE" in (out / "own" / "shop" / dialect / "schema.sql").read_text()
    with pg_engine.connection() as conn:
        assert conn.execute(f"SELECT count(*) FROM {report['schema']}.orders").fetchone() == (3,)
    assert "loaded and verified; queries identical on PostgreSQL 2 of 2" in capsys.readouterr().out


def _lock(path):
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda p: p.write_text("name,city\nAda,Oslo\n"), "not a SQLite database"),
        (lambda p: p.write_bytes(b""), "empty file, not a SQLite database"),
        (_lock, "cannot be read (database is locked)"),
    ],
    ids=["not_sqlite", "empty", "locked"],
)
def test_a_file_that_is_no_readable_sqlite_database_is_refused_by_name(shop, capsys, spoil, message):
    path, queries, out = shop
    holder = spoil(path)
    before = path.read_bytes()
    assert main(["normalize", "--sqlite", str(path), "--queries", str(queries), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"plbench: {path}: ") and message in err
    assert path.read_bytes() == before and not out.exists()  # nothing written, nothing lost
    if isinstance(holder, sqlite3.Connection):
        holder.close()


def test_a_query_failing_on_sqlite_is_named_and_nothing_is_written(shop, capsys):
    path, queries, out = shop
    queries.write_text(json.dumps([*QUERIES, {"query": "SELECT nope FROM customer"}]))
    assert main(["normalize", "--sqlite", str(path), "--queries", str(queries), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "1 query(ies) fail on SQLite: query 2 (SELECT nope FROM customer): OperationalError: no such column: nope"
        in err
    )
    assert not out.exists()


def test_a_queries_file_without_query_fields_is_refused(shop, capsys):
    path, queries, out = shop
    queries.write_text(json.dumps([{"sql": "SELECT 1"}]))
    assert main(["normalize", "--sqlite", str(path), "--queries", str(queries), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"plbench: {queries}: item 0 has no `query` string"
