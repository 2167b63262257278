"""Spider 2.0-Lite: schema descriptions → neutral model → DDL/loads, and task records, on tiny fixtures.

The fixture tree mimics the mirror: a loose SQLite description (header
`table_name,DDL`), a BigQuery archive (`table_name,ddl`, 3-part names, STRUCT /
ARRAY, nested values as dicts and as numpy reprs, one dataset without DDL.csv),
a Snowflake archive (`table_name,description,DDL`, CREATE OR REPLACE, VARIANT,
NUMBER(38,0), TIMESTAMP_LTZ), questions with and without gold, and a database
name that needs resolving (`sqlite-shop` → `SQLITE_SHOP`).
"""

from __future__ import annotations

import ast
import gc
import hashlib
import io
import json
import multiprocessing
import os
import tarfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlglot

from plbench.collector import collector_paused
from plbench.config import BuildConfig, NotConfigured
from plbench.normalize.emit import DecisionsFile, normalize, schema_name, write_files
from plbench.normalize.schema import SourceDatabase
from plbench.spider import spider2, spider2_values, stages
from plbench.spider.spider2 import parse_ddl, unpack_ahead, unpack_archives
from plbench.spider.spider2_rows import _required_in_target_names, build_spider2
from plbench.spider.spider2_tasks import resolve_database
from plbench.spider.spider2_values import nested_json, python_repr_value
from plbench.spider.stages import ingest_spider2, normalize_database, normalize_databases
from tests.fixtures import LITE, write_spider2


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """The build's own ingest of the fixture tree: (config, Spider2Inputs)."""
    root = tmp_path_factory.mktemp("raw")
    catalog = write_spider2(root, tmp_path_factory.mktemp("staging"))
    config = BuildConfig(
        raw_dir=root,
        cache_dir=tmp_path_factory.mktemp("cache"),
        normalized_dir=tmp_path_factory.mktemp("normalized"),
        catalog=catalog,
    )
    return config, ingest_spider2(config)


@pytest.fixture(scope="module")
def raw_root(ingested) -> Path:
    return ingested[0].raw_dir


@pytest.fixture(scope="module")
def read(ingested):
    """Every description as the partitions read it, by folder name, and the cache."""
    config, inputs = ingested
    return {name.split(".", 1)[1]: inputs.read(name, None) for name in inputs.databases}, config.cache_dir


# ---- archives ------------------------------------------------------------------------------------


def _archive_tree(root: Path, files: int) -> Path:
    """A mirror whose two archives hold `files` files of 64 KB (the snowflake one, which unpacks last) and one."""
    databases = root / LITE / "resource/databases"
    databases.mkdir(parents=True)
    for name, count in (("bigquery", 1), ("snowflake", files)):
        with tarfile.open(databases / f"{name}.tar.gz", "w:gz") as tar:
            for i in range(count):
                data = os.urandom(1 << 16)
                info = tarfile.TarInfo(f"{name}/db/f{i}.json")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return root


def test_a_build_waits_for_the_archives_a_child_is_unpacking_ahead_and_unpacks_nothing_itself(tmp_path, monkeypatch):
    raw, cache = _archive_tree(tmp_path / "raw", 300), tmp_path / "cache"
    last = hashlib.sha256((raw / LITE / "resource/databases/snowflake.tar.gz").read_bytes()).hexdigest()[:16]
    child = unpack_ahead(raw, cache)
    deadline = time.monotonic() + 60
    while not (cache / "unpacked" / f"{last}.tmp-{child.pid}").exists():  # the child unpacks the last archive
        assert time.monotonic() < deadline and child.is_alive(), "the child never started unpacking"
        time.sleep(0.005)

    def refuse(*args, **kwargs):
        raise AssertionError("the build unpacked an archive the child was unpacking")

    monkeypatch.setattr(tarfile, "open", refuse)  # in this process only: the child unpacks for real
    roots = unpack_archives(raw, cache)
    assert len(list((roots["snowflake"] / "db").iterdir())) == 300 and (roots["bigquery"] / "db").is_dir()
    child.join(30)
    assert child.exitcode == 0


def test_a_child_unpacking_ahead_leaves_a_missing_archive_for_the_build_to_report(tmp_path):
    child = unpack_ahead(tmp_path / "no-mirror", tmp_path / "cache")
    child.join(60)
    assert child.exitcode == 0  # quiet: what failed there, the build meets itself
    with pytest.raises(FileNotFoundError, match="bigquery.tar.gz"):
        unpack_archives(tmp_path / "no-mirror", tmp_path / "cache")


def test_archives_unpack_once_into_the_cache(raw_root, read):
    _, cache = read
    roots = unpack_archives(raw_root, cache)
    marker = roots["bigquery"].parent / ".complete"
    stamp = marker.stat().st_mtime_ns
    assert roots["bigquery"].is_relative_to(cache / "unpacked") and (roots["bigquery"] / "shop_bq").is_dir()
    assert unpack_archives(raw_root, cache)["bigquery"] == roots["bigquery"]
    assert marker.stat().st_mtime_ns == stamp  # not unpacked again
    assert sorted(p.name for p in (raw_root / LITE / "resource/databases").iterdir()) == [
        "bigquery.tar.gz",
        "snowflake.tar.gz",
        "sqlite",
    ]  # nothing written beside the source


# ---- reading -------------------------------------------------------------------------------------


def test_every_description_is_read_with_its_header_variant(ingested, read):
    databases, _ = read
    assert sorted(ingested[1].databases) == ["bigquery.shop_bq", "snowflake.SHOP_SF", "sqlite.SQLITE_SHOP"]
    assert {n: d.source_dialect for n, d in databases.items()} == {
        "SQLITE_SHOP": "sqlite",
        "shop_bq": "bigquery",
        "SHOP_SF": "snowflake",
    }
    assert [t.name for t in databases["SQLITE_SHOP"].tables] == ["customers", "orders"]
    assert databases["SQLITE_SHOP"].table("customers").primary_key == ("id",)
    assert databases["SQLITE_SHOP"].table("orders").foreign_keys[0].ref_table == "customers"
    assert databases["SHOP_SF"].table("ITEMS").column("ITEM_ID").nullable is False


def test_database_part_without_ddl_csv_is_built_from_json(read):
    db = read[0]["shop_bq"]
    assert {
        "decision": "no_ddl_csv",
        "detail": "bigquery-public-data.extra: columns from the JSON files",
    } in db.decisions
    assert [c.name for c in db.table("stats").columns] == ["day", "hits"]
    assert db.rows["stats"] == [("2020-01-01", "[758, 897, 4]")]


def test_sample_values_are_prepared_per_family(read):
    bq, sf = read[0]["shop_bq"], read[0]["SHOP_SF"]
    import datetime as dt
    import decimal

    assert bq.rows["events_20200101"][0] == (
        1,
        dt.datetime(2020, 1, 1, 10, 0),
        '{"kind": "view", "n": 2}',
        '["a b", "c"]',
        decimal.Decimal("12.500000000"),
        "POINT(1 2)",
    )
    assert bq.rows["events_20200101"][1][1] is None  # pandas NaT
    assert sf.rows["ITEMS"] == [(7, '{"color": "red"}', dt.datetime(2021, 5, 1, 8, 30), "x", b"\x00\xff")]


def test_numpy_and_python_reprs_become_json():
    assert python_repr_value("[{'k': 'a b', 'v': nan}\n {'k': 'c', 'v': array([1, 2], dtype=object)}]") == [
        {"k": "a b", "v": None},
        {"k": "c", "v": [1, 2]},
    ]
    assert python_repr_value("[9.9e-01 1.0e-05]") == [0.99, 1e-05]
    assert nested_json("[1 2 ... 9]") == ('"[1 2 ... 9]"', False)  # truncated repr: kept as a JSON string


# Reprs the JSON road reads (spider2_values._repr_as_json), with the value both roads give.
REPRS_READ_AS_JSON = [
    ("{'a': None, 'b': True, 'c': False}", {"a": None, "b": True, "c": False}),
    ("[nan, NaN, inf, NaT, -1.5e-07]", [None, None, None, None, -1.5e-07]),
    ("array([1, 2], dtype=object)", [1, 2]),
    ("[array(['x'],\n      dtype=object) array([], dtype=object)]", [["x"], []]),
    ("[758 897   -4]", [758, 897, -4]),  # numpy's missing commas
    ("['a' 'b']", ["a", "b"]),  # numpy's, not Python's string concatenation
    ("[{'k': 'None True'}\n {'k': 'array(1, dtype=x)'}]", [{"k": "None True"}, {"k": "array(1, dtype=x)"}]),
    ("{'q': 'say \"hi\"', \"it's\": 'x'}", {"q": 'say "hi"', "it's": "x"}),
    ("['tab\\there', '\\xe9\\u00e9', 'back\\\\slash']", ["tab\there", "\xe9\u00e9", "back\\slash"]),
    ("[1e400, 1]", [float("inf"), 1]),  # infinity, which nested_json writes as null, as ast's road does
]

# Reprs JSON would read otherwise than Python, or not at all: the road refuses them and ast reads them.
REPRS_LEFT_TO_AST = [
    ("{1: 'a', 2.5: 'b'}", {"1": "a", "2.5": "b"}),
    ("{True: 1, None: 2}", {"True": 1, "None": 2}),
    ("(1, 2)", [1, 2]),
    ("{'a', 'a'}", ["a", "a"]),
    ("[1, 2,]", [1, 2]),
    ("array([0])", [0]),
    ("[Timestamp('2020-01-01 00:00:00'), Decimal('1.50')]", ["2020-01-01 00:00:00", "1.50"]),
    ("[-inf, -nan]", [None, None]),
    ("[b'\\x00', .5, 1_000]", ["b'\\x00'", 0.5, 1000]),
]


@pytest.mark.parametrize(("text", "value"), REPRS_READ_AS_JSON)
def test_reprs_json_reads_give_what_ast_gives(text, value):
    by_ast = spider2_values._jsonable(
        spider2_values._literal(ast.parse(spider2_values._with_commas(text), mode="eval").body)
    )
    assert spider2_values._repr_as_json(text) == value == python_repr_value(text)
    assert spider2_values._json_text(value) == spider2_values._json_text(by_ast)


@pytest.mark.parametrize(("text", "value"), REPRS_LEFT_TO_AST)
def test_reprs_json_would_misread_are_read_by_ast(text, value):
    assert spider2_values._repr_as_json(text) is spider2_values._FAILED
    assert python_repr_value(text) == value


def test_nested_json_writes_what_json_holds():
    assert nested_json('{"a": [1, 2.5e20, NaN]}') == ('{"a": [1, 250000000000000000000, null]}', True)
    assert nested_json({"b": float("inf"), "c": "é"}) == ('{"b": null, "c": "é"}', True)
    assert nested_json("{'d': 1e-07}") == ('{"d": 0.0000001}', True)


def test_date_shards_share_one_parse_but_not_their_columns():
    ddl = "CREATE TABLE `p.ds.t_{}` (a INT64, b STRUCT<x STRING>, FOREIGN KEY (a) REFERENCES u (id))"
    first, second = parse_ddl(ddl.format(1), "bigquery"), parse_ddl(ddl.format(2), "bigquery")
    assert (first.name, second.name) == ("t_1", "t_2")
    assert first.columns == second.columns == [("a", "INT64", True), ("b", "STRUCT<X STRING>", True)]
    first.columns.append(("c", "INT64", True))
    assert len(second.columns) == 2
    assert [(fk.columns, fk.ref_table) for fk in second.foreign_keys] == [(("a",), "u")]


def test_parse_ddl_bigquery_three_part_name_and_nested_types():
    table = parse_ddl("CREATE OR REPLACE TABLE `p-1.ds.t` (a INT64 NOT NULL, b ARRAY<STRUCT<x INT64>>)", "bigquery")
    assert (table.name, table.fullname) == ("t", "p-1.ds.t")
    assert table.columns == [("a", "INT64", False), ("b", "ARRAY<STRUCT<X INT64>>", True)]
    with pytest.raises(ValueError, match="does not parse"):
        parse_ddl("CREATE TABLE x (14_DAY_SALES FLOAT, ISBN-13 TEXT)", "snowflake")


def test_shared_table_names_get_their_dataset_as_prefix():
    raw = [
        spider2.RawTable("p.a", "t", "p.a.t", [("x", "INT64", True)]),
        spider2.RawTable("p.b", "T", "p.b.T", [("x", "INT64", True)]),
        spider2.RawTable("p.b", "u", "p.b.u", [("x", "INT64", True)]),
    ]
    assert spider2.unique_table_names(raw) == ["a__t", "b__T", "u"]


# ---- exact DDL for the warehouse mapping rules ---------------------------------------------------


def test_bigquery_ddl_in_both_dialects(read):
    db = read[0]["shop_bq"]
    pg = [c for c in normalize(db, "postgres").create_statements if "events_20200101" in c][0]
    ora = [c for c in normalize(db, "oracle").create_statements if "EVENTS_20200101" in c][0]
    assert pg == (
        "CREATE TABLE events_20200101 (\n  event_id bigint NOT NULL,\n  ts timestamp,\n  payload jsonb,\n"
        "  tags jsonb,\n  price numeric,\n  area text\n);"
    )
    assert ora == (
        "CREATE TABLE EVENTS_20200101 (\n  EVENT_ID NUMBER(19) NOT NULL,\n  TS TIMESTAMP,\n"
        "  PAYLOAD CLOB CHECK (PAYLOAD IS JSON),\n  TAGS CLOB CHECK (TAGS IS JSON),\n  PRICE NUMBER,\n"
        "  AREA VARCHAR2(4000 BYTE)\n);"
    )
    rules = {c.name: c.rule for c in db.table("events_20200101").columns}
    assert rules == {
        "event_id": "integer",
        "ts": "timestamp",
        "payload": "nested_as_json",
        "tags": "nested_as_json",
        "price": "decimal",
        "area": "bigquery_geography_wkt",
    }


def test_snowflake_ddl_in_both_dialects(read):
    db = read[0]["SHOP_SF"]
    assert normalize(db, "postgres").create_statements == [
        "CREATE TABLE items (\n  item_id bigint NOT NULL,\n  attrs jsonb,\n  updated timestamp,\n  label text,\n"
        "  raw bytea\n);"
    ]
    assert normalize(db, "oracle").create_statements == [
        "CREATE TABLE ITEMS (\n  ITEM_ID NUMBER(19) NOT NULL,\n  ATTRS CLOB CHECK (ATTRS IS JSON),\n"
        '  UPDATED TIMESTAMP,\n  LABEL VARCHAR2(4000 BYTE),\n  "RAW" BLOB\n);'
    ]
    assert db.table("ITEMS").column("ITEM_ID").rule == "number_scale_0"


def test_schema_names_are_unique_across_sources(read):
    assert {normalize(db, "postgres").schema_name for db in read[0].values()} == {
        "s2_sqlite_sqlite_shop",
        "s2_bigquery_shop_bq",
        "s2_snowflake_shop_sf",
    }
    # BigQuery and Snowflake share ten names after case folding: the source dialect keeps them apart
    assert schema_name("spider2_lite", "bigquery.shop_sf") == "s2_bigquery_shop_sf"
    assert schema_name("spider2_lite", "snowflake.SHOP_SF") == "s2_snowflake_shop_sf"


def test_without_an_engine_the_databases_emit_in_worker_processes_as_in_this_one(ingested, tmp_path):
    config, inputs = ingested
    keys = inputs.partition_keys()
    oracle, given = NotConfigured("no server", dialect="oracle"), {inputs.source: inputs}
    pooled = dict(normalize_databases(config.with_(normalized_dir=tmp_path / "pooled"), given, keys, oracle))
    alone = dict(normalize_databases(config.with_(workers=1), given, keys, oracle))
    assert list(pooled) == keys and len(keys) > 2
    for key in keys:
        a, b = pooled[key], alone[key]
        assert (a.ddl, a.files, a.decision_counts, a.static_problems, a.not_run) == (
            b.ddl,
            b.files,
            b.decision_counts,
            b.static_problems,
            b.not_run,
        )
        assert a.decisions.text() == b.decisions.text()


def test_the_collector_is_paused_while_a_database_emits_and_back_after_even_on_error():
    seen = []

    @collector_paused()
    def emit(fail: bool) -> None:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("emission failed")

    assert gc.isenabled()
    emit(False)
    with pytest.raises(ValueError):
        emit(True)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()  # a caller that paused it keeps it paused
    try:
        emit(False)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # Steps on threads (pipelines/step_threads.py): the collector stays off while either has it paused
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    @collector_paused()
    def first() -> None:
        first_in.set()
        second_in.wait(10)

    @collector_paused()
    def second() -> None:
        second_in.set()
        first_out.wait(10)
        seen.append(gc.isenabled())  # the first has finished: still off, for this one

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    first_in.wait(10)
    threads[1].start()
    threads[0].join()
    first_out.set()
    threads[1].join()
    assert seen[-1] is False and gc.isenabled()  # and back on once the last one finished


# ---- loading and tasks on the real PostgreSQL, as the partitions and the task stage do -------------


@pytest.fixture(scope="module")
def loaded(ingested, pg_engine):
    config, inputs = ingested
    return {name: normalize_database(config, inputs, name, pg_engine) for name in sorted(inputs.databases)}


def test_all_fixture_databases_load_and_verify(loaded, pg_engine):
    assert {k: (r.load.verified, r.load.error) for k, r in loaded.items()} == {
        "sqlite.SQLITE_SHOP": (True, ""),
        "bigquery.shop_bq": (True, ""),
        "snowflake.SHOP_SF": (True, ""),
    }
    with pg_engine.connection() as conn:
        row = conn.execute("SELECT attrs->>'color', raw FROM s2_snowflake_shop_sf.items").fetchone()
    assert row == ("red", b"\x00\xff")


def test_question_database_names_resolve(read):
    by_key = {(d.source_dialect, name): d for name, d in read[0].items()}
    assert resolve_database("sqlite-shop", "sqlite", by_key) == "SQLITE_SHOP"
    assert resolve_database("shop-bq", "snowflake", by_key) is None


def test_task_records_reconcile_and_carry_the_gold_analysis(ingested, loaded):
    config, inputs = ingested
    built = build_spider2(config, inputs, loaded, {})
    tasks = [t for report in loaded.values() for t in report.spider2_tasks]
    assert len(tasks) + len(inputs.rejections) == inputs.input_count == 4
    assert {(r.source_id, r.dialect) for r in built.rows} == {("bq001", "postgres"), ("local001", "postgres")}
    # local001's reference loops over its gold, whose ORDER BY makes row order part of the answer
    row = next(r for r in built.rows if r.source_id == "local001")
    assert row.reference_code.startswith("DO ") and json.loads(row.comparison)["ordered"] is True
    assert json.loads(row.test_cases)["ordered"] is True
    assert {(r.source_id, r.reason_code) for r in inputs.rejections} == {
        ("local002", "no_gold_sql"),
        ("sf001", "database_not_found"),
    }
    local, bq = {t.instance_id: t for t in tasks}["local001"], {t.instance_id: t for t in tasks}["bq001"]
    assert (local.db, local.resolved_db) == ("sqlite-shop", "SQLITE_SHOP")
    assert local.external_knowledge == "# Totals\nSum amounts.\n"
    assert local.tables_required == ["customers", "orders"]
    assert local.columns_required == ["customers.id", "customers.name", "orders.amount", "orders.customer_id"]
    assert local.unresolved == []
    assert local.executes_on_samples is True and "s2_sqlite_sqlite_shop.customers" in local.gold_postgres
    assert local.oracle_parses and sqlglot.parse_one(local.gold_oracle, read="oracle") is not None
    assert local.reference_results == {"local001.csv": "name,total\nZoë,4.0\n"}
    assert bq.tables_required == ["bigquery-public-data.shop.events_*"]
    assert bq.columns_required == [
        "bigquery-public-data.shop.events_*.event_id",
        "bigquery-public-data.shop.events_*.payload",
    ]
    assert bq.executes_on_samples is False and bq.sqlstate  # no wildcard tables in PostgreSQL
    assert list(bq.reference_results) == ["bq001_a.csv"]


def test_source_dialect_rules_each_give_their_exact_output():
    from plbench.normalize.typemap import is_warehouse
    from plbench.spider.spider2_tasks import _FULL_NAMES

    assert [is_warehouse(s) for s in ("sqlite", "bigquery", "snowflake")] == [False, True, True]
    assert _FULL_NAMES["snowflake"]("DB", "PUBLIC", "T") == ("DB", "PUBLIC", "T")
    assert _FULL_NAMES["bigquery"]("db", "bigquery-public-data.ga", "t") == ("bigquery-public-data", "ga", "t")
    assert set(_FULL_NAMES) == {"snowflake", "bigquery"}  # SQLite names are never qualified


def _pooled_reports(config, given, keys, engine) -> tuple[dict, list[str]]:
    """normalize_databases' reports, and the names of the worker processes and threads alive after the first."""
    reports = normalize_databases(config.with_(workers=2), given, keys, engine)
    first = next(reports)
    workers = [p.name for p in multiprocessing.active_children()] + [
        t.name for t in threading.enumerate() if t.name.startswith("plbench-normalize")
    ]
    return dict([first, *reports]), workers


def test_with_postgres_the_databases_load_in_worker_processes_as_one_at_a_time(ingested, pg_engine):
    config, inputs = ingested
    keys, given = inputs.partition_keys(), {inputs.source: inputs}
    pooled, workers = _pooled_reports(config, given, keys, pg_engine)
    alone = dict(normalize_databases(config.with_(workers=1), given, keys, pg_engine))
    assert list(pooled) == keys and len(keys) > 2
    assert workers and not any(name.startswith("plbench-normalize") for name in workers)
    for key in keys:
        a, b = pooled[key], alone[key]
        assert a.load.verified and a.load.tables == b.load.tables, key
        assert (a.ddl, a.files, a.spider2_tasks) == (b.ddl, b.files, b.spider2_tasks), key


def test_in_a_daemon_process_postgres_databases_load_on_threads(ingested, pg_engine, monkeypatch):
    config, inputs = ingested
    keys, given = inputs.partition_keys(), {inputs.source: inputs}
    monkeypatch.setattr(stages.multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    threaded, workers = _pooled_reports(config, given, keys, pg_engine)
    alone = dict(normalize_databases(config.with_(workers=1), given, keys, pg_engine))
    assert workers and all(name.startswith("plbench-normalize") for name in workers)
    for key in keys:
        a, b = threaded[key], alone[key]
        assert a.load.verified and a.load.tables == b.load.tables, key
        assert (a.ddl, a.files, a.spider2_tasks) == (b.ddl, b.files, b.spider2_tasks), key


def test_required_names_are_given_as_the_dialect_s_schema_names_them(tmp_path):
    decisions = [
        {"decision": "table_origin", "table": "orders", "fullname": "proj.sales.ORDERS"},
        {"table": "orders", "column": "Amount", "target_table": "ORDERS_T", "target_name": "AMOUNT_C"},
        {"table": "orders", "decision": "primary_key_dropped", "detail": "no target here"},
    ]
    ndb = normalize(SourceDatabase("spider2_lite", "d", "bigquery", "d", [], {}, decisions), "oracle")
    rel, digest = next((p, d) for p, d in write_files(ndb, tmp_path).items() if p.endswith("/decisions.json"))
    db = SimpleNamespace(decisions=DecisionsFile(str(tmp_path / rel), digest))
    task = SimpleNamespace(
        tables_required=["proj.sales.orders", "proj.sales.events_*"],
        columns_required=["proj.sales.ORDERS.amount", "proj.sales.ORDERS.other", "proj.sales.events_*.id"],
    )
    assert _required_in_target_names(task, db) == {
        "tables_required": ("ORDERS_T", "proj.sales.events_*"),
        "columns_required": ("ORDERS_T.AMOUNT_C", "ORDERS_T.other", "proj.sales.events_*.id"),
    }
