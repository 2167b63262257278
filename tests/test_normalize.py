"""Normalization of source databases (issue 3): mapping rules, data widening, identifiers, Oracle value
rules, and loading + verification on a real PostgreSQL, all on SQLite databases the tests build."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest
import sqlglot
from psycopg import sql
from sqlglot import exp

from plbench.dialects import DIALECTS
from plbench.dialects.oracle import INSERT_BATCH as ORACLE_INSERT_BATCH
from plbench.normalize.emit import DecisionsFile, data_script, decisions_with, normalize, write_files
from plbench.normalize.load import LoadReport, canonical, load_postgres, verify_postgres
from plbench.normalize.schema import Column, SourceDatabase, Table
from plbench.normalize.sqlite_source import read_sqlite
from plbench.normalize.typemap import (
    SOURCE_RULES,
    IdentifierMap,
    coerce,
    coerce_column,
    namespace_targets,
    refine_family,
    source_family,
)

# ---- helpers -------------------------------------------------------------------------------------


def make_sqlite(
    path: Path, script: str, rows: dict[str, list[tuple]] | None = None, schema_edits: dict[str, str] | None = None
) -> Path:
    """A SQLite file from a DDL script and parameterised rows; `schema_edits` rewrites a table's
    stored CREATE text afterwards (how constraints the data violates get into a file)."""
    conn = sqlite3.connect(path)
    conn.executescript(script)
    for table, values in (rows or {}).items():
        if values:
            marks = ", ".join("?" * len(values[0]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', values)
    conn.commit()
    if schema_edits:
        conn.execute("PRAGMA writable_schema = ON")
        for table, create in schema_edits.items():
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (create, table))
        conn.commit()
    conn.close()
    return path


def read(tmp_path: Path, script: str, rows=None, schema_edits=None, name="db") -> SourceDatabase:
    path = make_sqlite(tmp_path / f"{name}.sqlite", script, rows, schema_edits)
    return read_sqlite(path, "spider1", name, f"{name}.sqlite")


def oracle_parses(statement: str) -> exp.Expression:
    """The statement parsed by sqlglot's Oracle dialect (raises on a parse error)."""
    parsed = sqlglot.parse(statement, read="oracle")
    assert len(parsed) == 1 and parsed[0] is not None, statement
    return parsed[0]


def decisions_of(db, kind: str) -> list[dict]:
    return [d for d in db.decisions if d.get("decision") == kind]


@pytest.fixture
def pg_conn(pg_engine):
    """An autocommit connection; every schema a test loads into is dropped afterwards."""
    loaded: list[str] = []
    with pg_engine.connection() as conn:
        conn.loaded_schemas = loaded
        yield conn
        for schema in loaded:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def load(conn, ndb) -> LoadReport:
    conn.loaded_schemas.append(ndb.schema_name)
    return load_postgres(conn, ndb)


# ---- 1. one test per source rule ------------------------------------------------------------------

# rule id -> (source dialect, declared type, one value, PostgreSQL column line, Oracle column line)
RULE_CASES = {
    "sqlite_bool_as_integer": ("sqlite", "BOOLEAN", 1, "c bigint", "C NUMBER(19)"),
    "date": ("sqlite", "DATE", "2020-02-29", "c date", "C DATE"),
    "timestamp": ("sqlite", "DATETIME", "2020-02-29 23:59:58", "c timestamp", "C TIMESTAMP"),
    "time": ("sqlite", "TIME", "07:30:00", "c time", "C VARCHAR2(32 BYTE)"),
    "boolean": ("bigquery", "BOOL", True, "c boolean", "C NUMBER(1)"),
    "bigquery_geography_wkt": ("bigquery", "GEOGRAPHY", "POINT(1 2)", "c text", "C VARCHAR2(4000 BYTE)"),
    "nested_as_json": (
        "bigquery",
        "STRUCT<a INT64, b ARRAY<STRING>>",
        {"a": 1, "b": ["x"]},
        "c jsonb",
        "C CLOB CHECK (C IS JSON)",
    ),
    "integer": ("sqlite", "INTEGER", -(2**63), "c bigint", "C NUMBER(19)"),
    "number_scale_0": ("snowflake", "NUMBER(38, 0)", 12, "c bigint", "C NUMBER(19)"),
    "decimal_scale_0": ("snowflake", "DECIMAL(38, 0)", -12, "c bigint", "C NUMBER(19)"),
    "decimal": ("sqlite", "DECIMAL(10,2)", 12.25, "c numeric", "C NUMBER"),
    "float": ("sqlite", "REAL", 0.1, "c double precision", "C BINARY_DOUBLE"),
    "binary": ("sqlite", "BLOB", b"\x00\xff", "c bytea", "C BLOB"),
    "text": ("sqlite", "VARCHAR(20)", "it's", "c text", "C VARCHAR2(4000 BYTE)"),
    "sqlite_affinity_integer": ("sqlite", "UNSIGNED BIG INT", 7, "c bigint", "C NUMBER(19)"),
    "sqlite_affinity_text": ("sqlite", "VARYING CHARACTER(255)", "v", "c text", "C VARCHAR2(4000 BYTE)"),
    "sqlite_affinity_real": ("sqlite", "UNSIGNED DOUBLE", 2.5, "c double precision", "C BINARY_DOUBLE"),
    "sqlite_untyped": ("sqlite", "", "free", "c text", "C VARCHAR2(4000 BYTE)"),
    "sqlite_affinity_numeric": ("sqlite", "MONEY", 3.75, "c numeric", "C NUMBER"),
    "unknown_as_text": ("snowflake", "INTERVAL", "1 day", "c text", "C VARCHAR2(4000 BYTE)"),
}


def rule_database(tmp_path: Path, rule: str) -> SourceDatabase:
    dialect, declared, value, _, _ = RULE_CASES[rule]
    name = f"rule_{rule}"
    if dialect == "sqlite":  # through the real introspection
        return read(tmp_path, f"CREATE TABLE t (c {declared})", {"t": [(value,)]}, name=name)
    family, rid = source_family(dialect, declared)
    family, note = refine_family(family, rid, [value])
    table = Table("t", (Column("c", declared.upper(), family, rid, True, note),))
    return SourceDatabase("spider1", name, dialect, "test", [table], {"t": [(value,)]})


def test_every_rule_has_a_case_and_every_case_hits_its_rule():
    assert set(RULE_CASES) == {r[0] for r in SOURCE_RULES}
    for rule, (dialect, declared, *_) in RULE_CASES.items():
        assert source_family(dialect, declared)[1] == rule


@pytest.mark.parametrize("rule", [r[0] for r in SOURCE_RULES])
def test_rule_emits_exact_ddl_for_both_dialects(rule, tmp_path, pg_conn):
    assert rule in RULE_CASES, f"rule {rule} has no expected DDL in RULE_CASES"
    _, _, _, pg_line, oracle_line = RULE_CASES[rule]
    db = rule_database(tmp_path, rule)
    assert db.tables[0].columns[0].rule == rule
    pg, ora = normalize(db, "postgres"), normalize(db, "oracle")
    assert pg.create_statements == [f"CREATE TABLE t (\n  {pg_line}\n);"]
    assert ora.create_statements == [f"CREATE TABLE T (\n  {oracle_line}\n);"]
    # The mapping decision names the rule and its reason.
    (decision,) = [d for d in pg.decisions if d.get("column") == "c"]
    assert decision["rule"] == rule and decision["rule_reason"]
    # Oracle: the DDL and the data parse in sqlglot's Oracle dialect.
    created = oracle_parses(ora.create_statements[0])
    assert isinstance(created, exp.Create) and created.find(exp.ColumnDef).name == "C"
    for statement in DIALECTS["oracle"].insert_statements(ora.tables[0]):
        assert isinstance(oracle_parses(statement), exp.MultitableInserts)
    # PostgreSQL: the DDL executes and the row loads and verifies on the real server.
    report = load(pg_conn, pg)
    assert report.error == "" and report.verified, report


# ---- 2. data-driven widening ---------------------------------------------------------------------


def test_empty_string_in_an_integer_column_widens_to_text(tmp_path):
    db = read(tmp_path, "CREATE TABLE t (n INTEGER)", {"t": [(1,), ("",), (None,)]})
    col = db.table("t").column("n")
    assert (col.family, col.rule) == ("text", "integer")
    assert col.note == "declared integer, widened to text: 1 value(s) are not integer, e.g. ''"
    assert normalize(db, "postgres").table("t").rows == [("1",), ("",), (None,)]
    assert normalize(db, "postgres").create_statements == ["CREATE TABLE t (\n  n text\n);"]


def test_real_values_in_an_integer_column_widen_to_float(tmp_path):
    db = read(tmp_path, "CREATE TABLE t (n INTEGER)", {"t": [(1,), (2.5,)]})
    col = db.table("t").column("n")
    assert col.family == "float" and col.note.startswith("declared integer, widened to float: 1 value(s)")
    assert normalize(db, "postgres").table("t").rows == [(1.0,), (2.5,)]
    # Numeric text in a NUMERIC column is stored as a number by SQLite; other text is not
    db = read(tmp_path, "CREATE TABLE t (n NUMERIC)", {"t": [("3",), ("n/a",)]}, name="numeric")
    assert db.table("t").column("n").family == "text"
    assert normalize(db, "postgres").table("t").rows == [("3",), ("n/a",)]


@pytest.mark.parametrize(
    "values, family",
    [
        (["2020-01-31", None], "date"),
        (["2020-01-31", "2020-01-31 10:00:00"], "text"),  # mixed shapes: nothing narrower fits all
        (["2020-01-31 10:00:00"], "timestamp"),
        (["01/31/2020"], "text"),
        (["2020-02-30"], "text"),  # looks ISO, is not a date
        (["2020-1-5"], "text"),
    ],
)
def test_dates_that_are_not_iso_stay_text(values, family, tmp_path):
    db = read(tmp_path, "CREATE TABLE t (d DATE)", {"t": [(v,) for v in values]})
    col = db.table("t").column("d")
    assert col.family == family
    assert (col.note == "") == (family == "date")
    rows = normalize(db, "postgres").table("t").rows
    if family == "date":
        assert rows == [(dt.date(2020, 1, 31),), (None,)]
    elif family == "timestamp":
        assert rows == [(dt.datetime(2020, 1, 31, 10),)]
    else:
        assert rows == [(v,) for v in values]


@pytest.mark.parametrize(
    "values, family, note",
    [
        ([1, 2, None], "integer", "untyped column holds only integer values"),
        ([1, 2.5], "float", "untyped column holds only float values"),
        (["a", "b"], "text", ""),
        ([b"\x01", b"\x02"], "binary", "untyped column holds only binary values"),
        ([1, "a"], "text", "untyped column holds mixed values: kept as text"),
    ],
)
def test_untyped_columns_take_the_family_of_their_values(values, family, note, tmp_path):
    db = read(tmp_path, "CREATE TABLE t (x)", {"t": [(v,) for v in values]})
    col = db.table("t").column("x")
    assert (col.source_type, col.rule, col.family, col.note) == ("", "sqlite_untyped", family, note)


def test_booleans_in_sqlite_are_integers_unless_the_data_says_otherwise(tmp_path):
    db = read(tmp_path, "CREATE TABLE t (b BOOLEAN, s BOOLEAN)", {"t": [(1, "True"), (0, "False")]})
    b, s = db.table("t").columns
    assert (b.family, b.rule, s.family) == ("integer", "sqlite_bool_as_integer", "text")
    for dialect, line in (("postgres", "b bigint"), ("oracle", "B NUMBER(19)")):
        ndb = normalize(db, dialect)
        assert line in ndb.create_statements[0]
        assert ndb.table("t").rows == [(1, "True"), (0, "False")]


def test_not_null_violated_by_the_data_is_not_declared(tmp_path):
    db = read(
        tmp_path,
        "CREATE TABLE t (a INTEGER, b TEXT)",
        {"t": [(1, None), (2, "x")]},
        schema_edits={"t": "CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL)"},
    )
    a, b = db.table("t").columns
    assert (a.nullable, b.nullable, b.note) == (False, True, "declared NOT NULL but holds NULL")
    assert normalize(db, "postgres").create_statements == ["CREATE TABLE t (\n  a bigint NOT NULL,\n  b text\n);"]


def test_duplicate_primary_keys_drop_the_key_with_a_decision(tmp_path, pg_conn):
    # (k TEXT: an INTEGER key would be the rowid, which cannot repeat)
    db = read(
        tmp_path,
        "CREATE TABLE t (k TEXT, v TEXT)",
        {"t": [("x", "a"), ("x", "b"), ("y", "c")]},
        schema_edits={"t": "CREATE TABLE t (k TEXT, v TEXT, PRIMARY KEY (k))"},
    )
    assert db.table("t").primary_key == ()
    assert decisions_of(db, "primary_key_dropped") == [
        {"table": "t", "decision": "primary_key_dropped", "detail": "('k',): 1 duplicate primary-key value(s)"}
    ]
    ndb = normalize(db, "postgres")
    assert "PRIMARY KEY" not in ndb.create_statements[0]
    assert decisions_of(ndb, "primary_key_dropped")[0]["dialect"] == "postgres"
    assert load(pg_conn, ndb).verified


def test_primary_key_values_sqlite_keeps_apart_but_coercion_merges_drop_the_key(tmp_path, pg_conn):
    # An untyped key column holds 1 and '1': distinct in SQLite, both '1' once the column is text.
    db = read(tmp_path, "CREATE TABLE t (k PRIMARY KEY, v TEXT)", {"t": [(1, "int"), ("1", "text")]})
    assert db.table("t").column("k").family == "text"
    assert db.table("t").primary_key == ()
    assert decisions_of(db, "primary_key_dropped")[0]["detail"] == "('k',): 1 duplicate primary-key value(s)"
    report = load(pg_conn, normalize(db, "postgres"))
    assert report.error == "" and report.verified


def test_null_in_a_primary_key_drops_it(tmp_path):
    db = read(tmp_path, "CREATE TABLE t (k TEXT PRIMARY KEY)", {"t": [("a",), (None,)]})
    assert db.table("t").primary_key == ()
    assert decisions_of(db, "primary_key_dropped")[0]["detail"] == "('k',): a primary-key column holds NULL"


FK_SCRIPT = """
CREATE TABLE parent (id INTEGER PRIMARY KEY, code TEXT, label TEXT);
CREATE TABLE child (
  cid INTEGER PRIMARY KEY,
  pid INTEGER REFERENCES parent (id),
  pcode TEXT REFERENCES parent (code),
  ptext TEXT REFERENCES parent (id),
  implicit INTEGER REFERENCES parent,
  ghost INTEGER REFERENCES nowhere (id)
);
"""


def test_foreign_keys_are_declared_only_onto_a_key_of_the_same_type(tmp_path, pg_conn):
    db = read(
        tmp_path,
        FK_SCRIPT,
        {"parent": [(1, "A", "one")], "child": [(10, 1, "A", "1", 1, 5), (11, 99, "Z", "x", 99, None)]},
    )
    dropped = decisions_of(db, "foreign_key_dropped")
    assert [d["detail"] for d in dropped] == ["('ghost',) references nowhere('id',), which does not exist"]
    assert {fk.columns for fk in db.table("child").foreign_keys} == {("pid",), ("pcode",), ("ptext",), ("implicit",)}
    pg, ora = normalize(db, "postgres"), normalize(db, "oracle")
    for ndb in (pg, ora):
        details = sorted(d["detail"] for d in decisions_of(ndb, "foreign_key_not_declared"))
        assert details[0] == "('pcode',) -> parent('code',): the referenced columns are not its primary key"
        assert details[1].startswith("('ptext',) -> parent('id',): column types differ after mapping")
        assert len(details) == 2
    # Child rows reference a missing parent (Spider data does): NOT VALID / ENABLE NOVALIDATE.
    n_pid, n_implicit = (
        1 + [fk.columns for fk in db.table("child").foreign_keys].index(c) for c in (("pid",), ("implicit",))
    )
    assert sorted(pg.constraint_statements) == sorted(
        f"ALTER TABLE child ADD CONSTRAINT fk_child_{n} FOREIGN KEY ({col}) REFERENCES parent (id) NOT VALID;"
        for n, col in ((n_pid, "pid"), (n_implicit, "implicit"))
    )
    assert sorted(ora.constraint_statements) == sorted(
        f"ALTER TABLE CHILD ADD CONSTRAINT FK_CHILD_{n} FOREIGN KEY ({col}) REFERENCES PARENT (ID) ENABLE NOVALIDATE;"
        for n, col in ((n_pid, "PID"), (n_implicit, "IMPLICIT"))
    )
    for statement in ora.constraint_statements:
        # sqlglot 30 parses ENABLE NOVALIDATE only as a generic Command; the rest is a real ALTER.
        assert isinstance(oracle_parses(statement), exp.Command)
        assert isinstance(oracle_parses(statement.removesuffix(" ENABLE NOVALIDATE;")), exp.Alter)
    report = load(pg_conn, pg)
    assert report.error == "" and report.verified
    rows = pg_conn.execute(
        "SELECT conname, convalidated FROM pg_constraint c JOIN pg_namespace n "
        "ON n.oid = c.connamespace WHERE contype = 'f' AND nspname = %s ORDER BY conname",
        (pg.schema_name,),
    ).fetchall()
    assert rows == sorted((f"fk_child_{n}", False) for n in (n_pid, n_implicit))
    # The constraints do hold for new rows.
    with pytest.raises(Exception, match="foreign key"):
        pg_conn.execute(
            sql.SQL("INSERT INTO {}.child (cid, pid) VALUES (12, 98)").format(sql.Identifier(pg.schema_name))
        )


# ---- 3. identifiers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, postgres, oracle",
    [
        ("UserName", "username", "USERNAME"),
        ("order", '"order"', '"ORDER"'),  # reserved in both
        ("level", "level", '"LEVEL"'),  # reserved in Oracle only
        ("limit", '"limit"', "LIMIT"),  # reserved in PostgreSQL only
        ("first name", '"first name"', '"FIRST NAME"'),
        ("2nd", '"2nd"', '"2ND"'),
        ("_tmp", "_tmp", '"_TMP"'),  # Oracle names start with a letter
        ("a$b", '"a$b"', "A$B"),
        ("café", '"café"', '"CAFÉ"'),
        ('say "hi"', '"say hi"', '"SAY HI"'),
    ],
)
def test_identifiers_fold_and_quote_per_dialect(source, postgres, oracle):
    assert IdentifierMap("postgres").add(source).sql == postgres
    assert IdentifierMap("oracle").add(source).sql == oracle


@pytest.mark.parametrize(
    "dialect, limit, char", [("oracle", 128, "é"), ("oracle", 128, "😀"), ("oracle", 128, "x"), ("postgres", 63, "ü")]
)
def test_long_identifiers_are_cut_to_the_byte_limit_as_valid_utf8_and_stay_unique(dialect, limit, char):
    names = IdentifierMap(dialect)
    base = char * (limit // len(char.encode()) + 5)
    targets = [names.add(base + suffix) for suffix in ("", "a", "b")]
    for t in targets:
        assert len(t.name.encode("utf-8")) <= limit
        assert "\ufffd" not in t.name and re.fullmatch(r".+_[0-9a-f]{8}", t.name.lower())
        # the stored name is the folded one: Oracle upper-cases an unquoted name, hash included
        assert t.name == (t.name.upper() if dialect == "oracle" else t.name.lower())
        assert t.why == f"longer than {limit} bytes"
        prefix = t.name[:-9]
        assert set(prefix) == {char.upper() if dialect == "oracle" else char}
        assert len(prefix.encode()) > limit - 9 - len(char.encode())  # cut at the last whole character
    assert len({t.name for t in targets}) == 3
    if dialect == "oracle":
        statement = f"CREATE TABLE {targets[0].sql} ({targets[1].sql} NUMBER(19))"
        assert isinstance(oracle_parses(statement), exp.Create)


def test_names_colliding_after_folding_or_truncation_get_a_suffix():
    names = IdentifierMap("oracle")
    assert names.add("straße").name == "STRASSE"
    second = names.add("STRASSE")  # a different source name, the same folded name
    assert (second.name, second.why) == ("STRASSE_2", "collides with another name after case folding or truncation")
    assert names.add("strasse_2").name == "STRASSE_2_2"
    # Names differing only in case are one SQLite name: the same target, not a collision.
    assert names.add("Straße") is names["straße"] and "STRAßE" in names
    pg = IdentifierMap("postgres")
    assert [pg.add(n).name for n in ("ab", 'a"b', 'a""b')] == ["ab", "ab_2", "ab_3"]
    # A long name whose cut form is already taken by another source name.
    long = "n" * 200
    cut = IdentifierMap("oracle").add(long).name
    names = IdentifierMap("oracle")
    names.add(cut.lower())
    t = names.add(long)
    assert t.name != cut and len(t.name.encode()) <= 128 and t.name.endswith("_2") and not t.quoted
    assert t.why == "longer than 128 bytes; collides with another name after case folding or truncation"


def test_a_namespace_is_mapped_as_one_identifier_map_adds_its_names_once_per_list():
    names = ("straße", "STRASSE", "level", "a b", "Straße")
    mapping = IdentifierMap("oracle")
    assert namespace_targets("oracle", names) == tuple(map(mapping.add, names))
    assert [t.sql for t in namespace_targets("oracle", names)] == [
        "STRASSE",
        "STRASSE_2",
        '"LEVEL"',
        '"A B"',
        "STRASSE",
    ]
    assert namespace_targets("oracle", names) is namespace_targets("oracle", names)  # a shard's list: mapped once
    assert namespace_targets("postgres", names)[2].sql == "level"


def test_identifier_collisions_through_normalize_give_distinct_columns(tmp_path, pg_conn):
    long_a, long_b = "é" * 80 + "_a", "é" * 80 + "_b"
    db = read(
        tmp_path,
        f'CREATE TABLE "select" ("{long_a}" INTEGER, "{long_b}" INTEGER, "Level" TEXT)',
        {"select": [(1, 2, "x")]},
    )
    ora = normalize(db, "oracle")
    names = [c.target.name for c in ora.tables[0].columns]
    assert len(set(names)) == 3 and all(len(n.encode()) <= 128 for n in names)
    assert ora.tables[0].target.sql == '"SELECT"' and names[2] == "LEVEL"
    assert ora.create_statements[0].endswith('  "LEVEL" VARCHAR2(4000 BYTE)\n);')
    assert isinstance(oracle_parses(ora.create_statements[0]), exp.Create)
    renamed = [d for d in ora.decisions if d.get("renamed")]
    assert len(renamed) == 2 and all(d["renamed"] == "longer than 128 bytes" for d in renamed)
    pg = normalize(db, "postgres")
    assert len({c.target.name for c in pg.tables[0].columns}) == 3
    assert load(pg_conn, pg).verified


# ---- 4. Oracle value rules -----------------------------------------------------------------------


def test_empty_strings_are_null_in_oracle_with_counts(tmp_path):
    db = read(
        tmp_path,
        "CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT, u TEXT)",
        {"t": [(1, "", "x"), (2, "", ""), (3, None, "y")]},
    )
    ora, pg = normalize(db, "oracle"), normalize(db, "postgres")
    assert ora.table("t").rows == [(1, None, "x"), (2, None, None), (3, None, "y")]
    assert pg.table("t").rows == [(1, "", "x"), (2, "", ""), (3, None, "y")]
    assert [(d["column"], d["detail"]) for d in decisions_of(ora, "empty_string_is_null")] == [
        ("s", "2 empty string(s) load as NULL in Oracle"),
        ("u", "1 empty string(s) load as NULL in Oracle"),
    ]
    assert decisions_of(pg, "empty_string_is_null") == []


def test_empty_strings_in_not_null_and_key_columns_lift_those_constraints_in_oracle_only(tmp_path):
    db = read(
        tmp_path,
        "CREATE TABLE t (k TEXT PRIMARY KEY, s TEXT NOT NULL);CREATE TABLE c (k TEXT REFERENCES t (k))",
        {"t": [("", "a"), ("b", "")], "c": [("b",)]},
    )
    ora, pg = normalize(db, "oracle"), normalize(db, "postgres")
    assert [t.source.name for t in ora.tables] == ["c", "t"]  # tables come in name order
    assert ora.create_statements[1] == "CREATE TABLE T (\n  K VARCHAR2(4000 BYTE),\n  S VARCHAR2(4000 BYTE)\n);"
    assert pg.create_statements[1] == "CREATE TABLE t (\n  k text,\n  s text NOT NULL,\n  PRIMARY KEY (k)\n);"
    assert decisions_of(ora, "primary_key_dropped")[0]["detail"] == (
        "('k',): a primary-key column holds '', which is NULL in Oracle"
    )
    (s_decision,) = [d for d in ora.decisions if d.get("column") == "s" and "note" in d]
    assert s_decision["note"] == "declared NOT NULL but holds '', which is NULL in Oracle"
    # Without the key, the foreign key onto it is not declared in Oracle; PostgreSQL keeps both.
    assert ora.constraint_statements == [] and len(decisions_of(ora, "foreign_key_not_declared")) == 1
    assert pg.constraint_statements == [
        "ALTER TABLE c ADD CONSTRAINT fk_c_1 FOREIGN KEY (k) REFERENCES t (k) NOT VALID;"
    ]


def test_booleans_load_as_zero_and_one_in_oracle():
    table = Table("flags", (Column("f", "BOOL", "boolean", "boolean"), Column("t", "TIME", "time", "time")))
    db = SourceDatabase(
        "spider2_lite",
        "bq_flags",
        "bigquery",
        "test",
        [table],
        {"flags": [(True, dt.time(7, 5)), (False, None), ("true", dt.time(0, 0, 1))]},
    )
    ora, pg = normalize(db, "oracle"), normalize(db, "postgres")
    assert ora.table("flags").rows == [(1, "07:05:00"), (0, None), (1, "00:00:01")]
    assert pg.table("flags").rows == [(True, dt.time(7, 5)), (False, None), (True, dt.time(0, 0, 1))]
    (statement,) = DIALECTS["oracle"].insert_statements(ora.table("flags"))
    assert statement == (
        "INSERT ALL\n  INTO FLAGS (F, T) VALUES (1, '07:05:00')\n"
        "  INTO FLAGS (F, T) VALUES (0, NULL)\n"
        "  INTO FLAGS (F, T) VALUES (1, '00:00:01')\nSELECT 1 FROM DUAL;"
    )
    assert DIALECTS["postgres"].copy_text(pg.table("flags")) == "True\t07:05:00\nFalse\t\\N\nTrue\t00:00:01\n"


# Every value type rows hold, with its COPY text field and its checksum text (exact-type fast paths and the rest)
VALUE_TEXTS = [
    (None, "\\N", "\\N"),
    ("a\tb\nc\\d\re", "a\\tb\\nc\\\\d\\re", "a\tb\nc\\d\re"),
    ("plain", "plain", "plain"),
    (-12, "-12", "-12"),
    (True, "True", "True"),
    (2.5, "2.5", "2.5"),
    (float("nan"), "NaN", "nan"),
    (float("-inf"), "-Infinity", "-inf"),
    (decimal.Decimal("1.50"), "1.50", "1.5"),
    (decimal.Decimal("1E+2"), "1E+2", "1E+2"),
    (dt.datetime(2020, 1, 2, 3, 4, 5), "2020-01-02 03:04:05", "2020-01-02T03:04:05"),
    (dt.date(2020, 1, 2), "2020-01-02", "2020-01-02"),
    (dt.time(7, 5), "07:05:00", "07:05:00"),
    (b"\x00\xff", "\\\\x00ff", "00ff"),
]


@pytest.mark.parametrize("value, copy_field, canonical_text", VALUE_TEXTS, ids=lambda v: repr(v)[:20])
def test_each_value_type_has_its_copy_field_and_checksum_text(value, copy_field, canonical_text):
    table = dataclasses.make_dataclass("Rows", ["rows", ("data_text", object, None)])([(value, 1)])
    assert DIALECTS["postgres"].copy_text(table) == f"{copy_field}\t1\n"
    assert canonical(value) == canonical_text


def test_oracle_insert_all_batches_and_literals(tmp_path):
    n = 2 * ORACLE_INSERT_BATCH + 7
    db = read(tmp_path, "CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT)", {"t": [(i, f"r{i}") for i in range(n)]})
    statements = DIALECTS["oracle"].insert_statements(normalize(db, "oracle").table("t"))
    assert [s.count("\n  INTO T (K, S) VALUES (") for s in statements] == [ORACLE_INSERT_BATCH, ORACLE_INSERT_BATCH, 7]
    assert all(s.startswith("INSERT ALL\n") and s.endswith("\nSELECT 1 FROM DUAL;") for s in statements)
    assert "VALUES (100, 'r100')" in statements[1] and "VALUES (206, 'r206')" in statements[2]
    for s in statements:
        assert isinstance(oracle_parses(s), exp.MultitableInserts)

    values = [
        'it\'s "q"',
        "tab\tnew\nline\\",
        None,
        0.1,
        -0.0,
        float("nan"),
        float("inf"),
        float("-inf"),
        dt.date(2020, 2, 29),
        dt.datetime(2020, 2, 29, 1, 2, 3, 456000),
        b"\x00\xab",
        decimal.Decimal("1.50"),
        -(2**63),
    ]
    cols = tuple(Column(f"c{i}", "", "text", "sqlite_untyped") for i in range(len(values)))
    ntable = normalize(SourceDatabase("spider1", "lit", "sqlite", "test", [Table("lit", cols)], {}), "oracle").tables[0]
    ntable.rows = [tuple(values)]
    (statement,) = DIALECTS["oracle"].insert_statements(ntable)
    assert (
        statement.split(" VALUES ", 1)[1].split("\n")[0]
        == (
            "('it''s \"q\"', 'tab\tnew\nline\\', NULL, 0.1d, -0.0d, BINARY_DOUBLE_NAN, BINARY_DOUBLE_INFINITY, "
            "-BINARY_DOUBLE_INFINITY, DATE '2020-02-29', TIMESTAMP '2020-02-29 01:02:03.456000', "
            "HEXTORAW('00ab'), 1.50, -9223372036854775808)".split("\n")[0]
        )
    )
    assert isinstance(oracle_parses(statement), exp.MultitableInserts)


def test_varchar2_or_clob_by_byte_length(tmp_path):
    fits = "é" * 2000  # 2000 characters, 4000 bytes
    too_long = "é" * 2001  # 2001 characters, 4002 bytes
    db = read(tmp_path, "CREATE TABLE t (a TEXT, b TEXT, j JSON)", {"t": [(fits, too_long, '{"k": [1]}')]})
    ora = normalize(db, "oracle")
    assert ora.create_statements == [
        "CREATE TABLE T (\n  A VARCHAR2(4000 BYTE),\n  B CLOB,\n  J CLOB CHECK (J IS JSON)\n);"
    ]
    assert normalize(db, "postgres").create_statements == ["CREATE TABLE t (\n  a text,\n  b text,\n  j jsonb\n);"]
    (statement,) = DIALECTS["oracle"].insert_statements(ora.table("t"))
    values = statement.split(" VALUES (", 1)[1]
    # Literals come in pieces of 1000 characters; a value over 4000 bytes is concatenated as a CLOB
    # (VARCHAR2 || VARCHAR2 beyond 4000 bytes is ORA-01489).
    a, b = "'" + "é" * 1000 + "'", "'" + "é" * 1000 + "'"
    assert values.startswith(f"{a} || {b}, TO_CLOB({a}) || {b} || 'é', '{{\"k\": [1]}}')")
    assert isinstance(oracle_parses(statement), exp.MultitableInserts)


# ---- 5. loading and verification on PostgreSQL ---------------------------------------------------

FIXTURE_SCRIPT = """
CREATE TABLE people (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  nick TEXT,
  born DATE,
  seen DATETIME,
  score REAL,
  photo BLOB,
  "order" INTEGER,
  note TEXT,
  flag BOOLEAN,
  amount NUMERIC
);
CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, owner INTEGER REFERENCES people (id), kind VARCHAR(10));
CREATE TABLE "empty table" (a INTEGER, "b col" TEXT);
CREATE TABLE tags (tag TEXT PRIMARY KEY, extra);
"""
NOTES = [
    'it\'s a "quote"',
    "tab\there",
    "new\nline\r\nwin",
    "back\\slash \\N \\.",
    "naïve 日本語 😀",
    "",
    None,
    "\\x00ab",
]
SCORES = [0.1, 0.30000000000000004, -1.5, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.12345679, None]
FIXTURE_ROWS = {
    "people": [
        (
            i + 1,
            f"person {i}",
            ["", None, "Bo"][i % 3],
            ["2001-02-03", None, "1999-12-31"][i % 3],
            ["2020-01-02 03:04:05", None][i % 2],
            SCORES[i],
            [b"\x00\x01\xff", None][i % 2],
            i * 10,
            NOTES[i],
            i % 2,
            [12.5, 3, None][i % 3],
        )
        for i in range(8)
    ],
    "pets": [(1, 1, "cat"), (2, 2, "dog"), (3, 99, "ghost")],  # a dangling owner
    "empty table": [],
    "tags": [("a", 1), ("b", "two"), ("", None)],
}


@pytest.fixture
def fixture_db(tmp_path) -> SourceDatabase:
    return read(tmp_path, FIXTURE_SCRIPT, FIXTURE_ROWS, name="nz_fixture")


def test_fixture_database_is_read_as_expected(fixture_db):
    people = fixture_db.table("people")
    assert [(c.name, c.family) for c in people.columns] == [
        ("id", "integer"),
        ("name", "text"),
        ("nick", "text"),
        ("born", "date"),
        ("seen", "timestamp"),
        ("score", "float"),
        ("photo", "binary"),
        ("order", "integer"),
        ("note", "text"),
        ("flag", "integer"),
        ("amount", "decimal"),
    ]
    assert people.primary_key == ("id",) and fixture_db.table("tags").column("extra").family == "text"
    assert fixture_db.rows["empty table"] == [] and fixture_db.row_count() == 14


def test_load_and_verify_on_postgres(fixture_db, pg_engine, pg_conn):
    ndb = normalize(fixture_db, "postgres")
    report = load(pg_conn, ndb)
    assert report.loaded and report.error == "" and report.verified, report
    assert {t: v["rows"] for t, v in report.tables.items()} == {"people": 8, "pets": 3, "empty table": 0, "tags": 3}
    assert report.mismatches() == []
    with pg_engine.session(reads=(ndb.schema_name,)) as s:
        result = s.query('SELECT note, score, "order", amount, photo, born, seen FROM people ORDER BY id')
        assert result.error is None
        assert [r[0] for r in result.rows] == NOTES
        assert [repr(r[1]) for r in result.rows] == [repr(v) for v in SCORES]
        assert [r[2] for r in result.rows] == [i * 10 for i in range(8)]
        assert [r[3] for r in result.rows][:3] == [decimal.Decimal("12.5"), decimal.Decimal(3), None]
        assert result.rows[0][4:] == (b"\x00\x01\xff", dt.date(2001, 2, 3), dt.datetime(2020, 1, 2, 3, 4, 5))
        assert s.query('SELECT count(*), count("b col") FROM "empty table"').rows == [(0, 0)]
        assert s.query("SELECT tag FROM tags ORDER BY tag").rows == [("",), ("a",), ("b",)]
        assert s.query("SELECT p.kind FROM pets p LEFT JOIN people o ON o.id = p.owner WHERE o.id IS NULL").rows == [
            ("ghost",)
        ]

    # Loading again replaces the schema as a whole.
    assert load(pg_conn, ndb).verified

    # A changed row on the server no longer matches the expected checksum (same row count).
    pg_conn.execute(
        sql.SQL("UPDATE {}.people SET score = score + 1e-9 WHERE id = 1").format(sql.Identifier(ndb.schema_name))
    )
    tables = verify_postgres(pg_conn, ndb)
    assert tables["people"]["rows_match"] and not tables["people"]["checksum_match"]
    assert [t for t, v in tables.items() if not v["checksum_match"]] == ["people"]
    assert not LoadReport(ndb.key, "postgres", True, tables=tables).verified

    # So does a changed expectation: a text value differing only in trailing whitespace, and a lost row.
    assert load(pg_conn, ndb).verified
    ndb.table("pets").rows[0] = (1, 1, "cat ")
    ndb.table("tags").rows.pop()
    tables = verify_postgres(pg_conn, ndb)
    assert (tables["pets"]["rows_match"], tables["pets"]["checksum_match"]) == (True, False)
    assert (tables["tags"]["rows_match"], tables["tags"]["checksum_match"]) == (False, False)
    assert tables["people"]["checksum_match"]


def test_a_failing_load_reports_the_sqlstate_and_leaves_no_schema(fixture_db, pg_conn):
    ndb = normalize(fixture_db, "postgres")
    ndb.table("people").rows.append(ndb.table("people").rows[0])  # duplicate primary key
    report = load(pg_conn, ndb)
    assert not report.loaded and not report.verified and report.error.startswith("23505: ")
    assert pg_conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (ndb.schema_name,)).fetchone() == (
        0,
    )


COPY_BLOCK = re.compile(r"^COPY ([^\n]+) FROM stdin;\n(.*?)^\\\.\n", re.M | re.S)


@pytest.mark.parametrize(
    ("values", "family", "expected"),
    [
        (["a", None, "b"], "text", ["a", None, "b"]),
        ([b"x", 3, None], "text", ["x", "3", None]),
        ([1, "2", None], "integer", [1, 2, None]),
        ([dt.datetime(2020, 1, 2, 3), "2020-01-01"], "date", [dt.datetime(2020, 1, 2, 3), dt.date(2020, 1, 1)]),
        ([1, 2.5], "float", [1.0, 2.5]),
    ],
)
def test_coerce_column_is_coerce_value_by_value(values, family, expected):
    out = coerce_column(list(values), family)
    assert out == expected == [coerce(v, family) for v in values]
    assert [type(v) for v in out] == [type(v) for v in expected]


def test_a_text_column_is_a_clob_in_oracle_by_its_longest_text_in_bytes():
    column = Column("t", "TEXT", "text", "sqlite_text", True, "")
    texts = {"ascii": "a" * 3000, "wide": "é" * 2001}  # fewer characters, more bytes (4,002)
    tables = [Table(name, (column,), (), ()) for name in texts]
    db = SourceDatabase("spider1", "d", "sqlite", "d.sqlite", tables, {k: [(v,), (None,)] for k, v in texts.items()})
    types = {t.source.name: t.columns[0].type_sql for t in normalize(db, "oracle").tables}
    assert types == {"ascii": "VARCHAR2(4000 BYTE)", "wide": "CLOB"}


@pytest.mark.parametrize(
    "decisions",
    [
        [],
        [{"b": 1, "a": "x,\ny"}],
        [{"z": None}, {"k": [1, 2], "c": "'"}],
        [{"é": "ü\t", "nan": float("nan"), "n": decimal.Decimal("1.50"), "t": (1, {"x": True}), "p": Path("a")}],
    ],
)
def test_decisions_file_reads_as_the_one_line_list_of_the_release(tmp_path, decisions):
    ndb = normalize(SourceDatabase("spider1", "d", "sqlite", "d.sqlite", [], {}, decisions), "oracle")
    sums = write_files(ndb, tmp_path)
    (rel,) = [p for p in sums if p.endswith("/decisions.json")]
    cell = DecisionsFile(str(tmp_path / rel), sums[rel])
    assert cell.text() == json.dumps(ndb.decisions, sort_keys=True, default=str)
    (tmp_path / rel).write_text("[\n]\n")
    with pytest.raises(ValueError, match="decisions.json changed since the stage that wrote it ran"):
        cell.text()
    (tmp_path / rel).unlink()
    with pytest.raises(FileNotFoundError, match="decisions.json is gone"):
        cell.text()


def test_decisions_with_a_pair_decodes_exactly_the_decisions_holding_it(tmp_path):
    decisions = [
        {"decision": "table_origin", "table": "t\u00e9", "fullname": "d.s.t\u00e9"},
        {"table": "t\u00e9", "column": "a", "target_table": "T\u00c9", "target_name": "A"},
        {"table": "t", "column": "b", "target_table": "T", "target_name": "B", "note": 'says "table": "t\u00e9"'},
        {"table": "t\u00e9x", "column": "c", "target_table": "TX", "target_name": "C"},
        {"table": "u", "renamed_from": {"table": "t\u00e9"}},  # the pair, but not the decision's own
    ]
    ndb = normalize(SourceDatabase("spider1", "d", "sqlite", "d.sqlite", [], {}, decisions), "oracle")
    sums = write_files(ndb, tmp_path)
    (rel,) = [p for p in sums if p.endswith("/decisions.json")]
    lines = DecisionsFile(str(tmp_path / rel), sums[rel]).lines()
    assert len(lines) == len(ndb.decisions)
    for key, value in (("table", "t\u00e9"), ("table", "t"), ("decision", "table_origin"), ("table", "none")):
        assert decisions_with(lines, key, value) == [d for d in ndb.decisions if d.get(key) == value]


def test_write_files_and_the_postgres_data_script_loads_through_copy(fixture_db, tmp_path, pg_conn):
    ndb = normalize(fixture_db, "postgres")
    root = tmp_path / "normalized"
    sums = write_files(ndb, root)
    folder = "spider1/nz_fixture/postgres"
    assert set(sums) == {f"{folder}/{f}" for f in ("schema.sql", "data.sql", "constraints.sql", "decisions.json")}
    for rel, digest in sums.items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest
    assert not list((root / folder).glob("*.tmp"))
    schema_sql = (root / folder / "schema.sql").read_text()
    assert schema_sql == "\n\n".join(ndb.create_statements) + "\n" and schema_sql.count("CREATE TABLE") == 4
    constraints_sql = (root / folder / "constraints.sql").read_text()
    assert constraints_sql == (
        "ALTER TABLE pets ADD CONSTRAINT fk_pets_1 FOREIGN KEY (owner) REFERENCES people (id) NOT VALID;\n"
    )
    decisions = json.loads((root / folder / "decisions.json").read_text())
    assert {d["column"] for d in decisions if d.get("table") == "people"} == {
        c.name for c in fixture_db.table("people").columns
    }

    data = (root / folder / "data.sql").read_text()
    blocks = COPY_BLOCK.findall(data)
    assert [b[0] for b in blocks] == [
        'people (id, name, nick, born, seen, score, photo, "order", note, flag, amount)',
        "pets (pet_id, owner, kind)",
        "tags (tag, extra)",
    ]  # no block for the empty table
    assert "".join(f"COPY {t} FROM stdin;\n{body}\\.\n" for t, body in blocks) == data
    assert blocks[0][1] == DIALECTS["postgres"].copy_text(ndb.table("people"))
    assert ndb.table("people").data_text is DIALECTS["postgres"].copy_text(ndb.table("people"))  # the load's, once
    assert "back\\\\slash \\\\N \\\\.\t" in blocks[0][1] and "new\\nline\\r\\nwin" in blocks[0][1]

    # Replay schema.sql and the COPY blocks into another schema and verify it like a load.
    replayed = dataclasses.replace(ndb, schema_name=ndb.schema_name + "_replay")
    pg_conn.loaded_schemas.append(replayed.schema_name)
    schema = sql.Identifier(replayed.schema_name)
    with pg_conn.transaction():
        pg_conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s}").format(s=schema))
        pg_conn.execute(sql.SQL("SET LOCAL search_path = {s}").format(s=schema))
        pg_conn.execute(schema_sql)
        with pg_conn.cursor() as cur:
            for target, body in blocks:
                with cur.copy(f"COPY {target} FROM STDIN") as copy:
                    copy.write(body)
        pg_conn.execute(constraints_sql)  # after the data: pets holds a dangling owner
    tables = verify_postgres(pg_conn, replayed)
    assert all(v["rows_match"] and v["checksum_match"] for v in tables.values()), tables

    # Oracle files: every statement of schema.sql and data.sql parses in sqlglot's Oracle dialect.
    ora = normalize(fixture_db, "oracle")
    write_files(ora, root)
    ora_folder = root / "spider1/nz_fixture/oracle"
    ddl = sqlglot.parse((ora_folder / "schema.sql").read_text(), read="oracle")
    assert [type(e) for e in ddl] == [exp.Create] * 4
    (fk,) = sqlglot.parse((ora_folder / "constraints.sql").read_text(), read="oracle")
    assert isinstance(fk, exp.Command)  # ENABLE NOVALIDATE: see test_foreign_keys_are_declared_only_onto...
    inserts = sqlglot.parse((ora_folder / "data.sql").read_text(), read="oracle")
    assert len(inserts) == 3 and all(isinstance(e, exp.MultitableInserts) for e in inserts)
    assert (ora_folder / "data.sql").read_bytes().decode() == data_script(ora)  # CR LF kept inside literals


def test_a_table_wider_than_the_column_limit_keeps_its_first_columns_and_folds_the_rest_into_json(pg_engine):
    from plbench.normalize.emit import MAX_COLUMNS, OVERFLOW_COLUMN
    from plbench.normalize.schema import Column, SourceDatabase, Table

    width = MAX_COLUMNS + 400
    columns = tuple(Column(f"d{i}", "FLOAT64", "float", "float") for i in range(width))
    rows = [tuple(float(i) + r for i in range(width)) for r in range(3)] + [tuple([None] * width)]
    rows[1] = rows[1][:-1] + (float("nan"),)  # JSON has no NaN: it is kept as the text "nan"
    db = SourceDatabase("spider2_lite", "bigquery.wide", "bigquery", "x", [Table("cases", columns)], {"cases": rows})
    for dialect in ("postgres", "oracle"):
        table = normalize(db, dialect).tables[0]
        assert len(table.columns) == MAX_COLUMNS and table.columns[-1].source.name == OVERFLOW_COLUMN
        assert json.loads(table.rows[0][-1])[f"d{width - 1}"] == float(width - 1)
        assert json.loads(table.rows[3][-1]) == {} and json.loads(table.rows[1][-1])[f"d{width - 1}"] == "nan"
    postgres = normalize(db, "postgres")
    assert any(d.get("decision") == "wide_table_overflow" for d in postgres.decisions)
    with pg_engine.connection() as conn:
        report = load_postgres(conn, postgres)  # 1,000 numbers per row would not fit a PostgreSQL row
        assert report.verified, report.error
        conn.execute(f"DROP SCHEMA {postgres.schema_name} CASCADE")
