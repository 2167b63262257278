"""The quality suites catch each kind of defect they exist for, on small hand-made releases; the
metadata detector finds constructs, tables and columns in sample PL/SQL and PL/pgSQL."""

import copy
import json

import pyarrow as pa
import pytest

from plbench.quality import (
    _batch_definition,
    _new_batch_definition,
    check_release,
    columns_read,
    expand_suite,
    failed_suites,
    is_row_local,
    load_suite,
    run_suite,
    selects,
    table_frame,
    warm_up,
    where_text,
)
from plbench.release import REJECTION_SCHEMA, PreparedRelease
from plbench.spider.summary import DATABASE_SCHEMA
from plbench.spider.tasks import reference_block
from plbench.taskrow import TYPE_SCHEMA, TaskRow
from plbench.validation.metadata import (
    detect_constructs,
    embedded_queries,
    metadata_accuracy,
    referenced_schema,
    row_findings,
)
from tests.helpers import typed_task


def _task(task_id: str, dialect: str, **changes) -> TaskRow:
    return TaskRow(
        task_id=task_id,
        subset=task_id.split("/")[0],
        dialect=dialect,
        source_dataset="mbpp",
        source_id=task_id.split("/")[1],
        prompt="Write f.",
        entry_point="f",
        signature="{}",
        setup_sql="",
        scaffold="CREATE OR REPLACE FUNCTION f(x bigint) RETURNS bigint",
        python_reference="def f(x): return x",
        test_block="DO $$ BEGIN END $$;",
        test_cases='[{"args": [1], "expected": 1}]',
        comparison='{"atol": 0}',
        plsql_constructs=("function",),
        replay_status="passed",
        replay_engine="PostgreSQL 16",
        mutants_total=3,
        mutants_killed=3,
        raw_sha256="ab" * 32,
        builder_version="0.1.0",
        build_id="b1",
    ).with_(**changes)


def _change_task(prepared: PreparedRelease, index: int, **changes) -> None:
    prepared.tasks[index] = prepared.tasks[index].with_(**changes)


def _database(dialect: str, **changes) -> dict:
    row = {
        "source": "spider1",
        "database": "shop",
        "dialect": dialect,
        "schema_name": "spider1_shop",
        "tables": 2,
        "rows": 9,
        "ddl": "CREATE TABLE customer (id integer);",
        "ddl_path": f"spider1/shop/{dialect}/schema.sql",
        "ddl_sha256": "a" * 64,
        "data_path": f"spider1/shop/{dialect}/data.sql",
        "data_sha256": "b" * 64,
        "loaded": True if dialect == "postgres" else None,
        "verified": True if dialect == "postgres" else None,
        "table_checksums": "{}" if dialect == "postgres" else None,
        "decisions": "[]",
        "static_problems": [],
    }
    return row | changes


def _release() -> PreparedRelease:
    """Two MBPP tasks in both dialects, one shared rejection, one type, one database in both dialects."""
    tasks = [_task(t, d) for t in ("mbpp/1", "mbpp/2") for d in ("oracle", "postgres")]
    rejections = [
        {
            "subset": "mbpp",
            "source_id": "3",
            "dialect": None,
            "level": "task",
            "stage": "ingest",
            "reason_code": "malformed_record",
            "detail": "line 3",
        }
    ]
    types = [{"dialect": "postgres", "name": "plb_rec", "ddl": "CREATE TYPE plb_rec AS (f1 bigint);", "tasks": 1}]
    counts = {
        "input": 3,
        "released": {"oracle": 2, "postgres": 2},
        "rejected": {"malformed_record": 1},
        "rejected_by_dialect": {"oracle": {}, "postgres": {}},
        "cases_dropped": {},
        "cases_dropped_by_dialect": {"oracle": {}, "postgres": {}},
    }
    normalization = {
        "spider1": {"databases": 1, "loaded": {"postgres": 1}, "tables": 2, "rows": 9, "oracle": {"emitted": 1}}
    }
    manifest = {"subsets": {"mbpp": counts}, "types": {"postgres": 1}, "normalization": normalization}
    return PreparedRelease(
        tasks,
        {
            "rejections.parquet": (rejections, REJECTION_SCHEMA),
            "types.parquet": (types, TYPE_SCHEMA),
            "databases.parquet": ([_database("oracle"), _database("postgres")], DATABASE_SCHEMA),
        },
        manifest,
    )


@pytest.fixture(scope="module")
def clean():
    return _release()


def _failures(prepared: PreparedRelease) -> dict[str, list[str]]:
    return failed_suites(check_release(prepared))


def test_a_consistent_release_passes_every_suite(clean):
    quality = check_release(clean)
    assert set(quality) == {"tasks", "rejections", "types", "databases"}
    assert all(q["success"] and q["failed"] == 0 and q["expectations"] > 5 for q in quality.values()), quality


def test_the_suites_run_with_the_cyclic_collector_paused_and_leave_it_running(clean, monkeypatch):
    import gc

    from plbench import quality

    seen, run_suite = [], quality.run_suite
    monkeypatch.setattr(quality, "run_suite", lambda *args: seen.append(gc.isenabled()) or run_suite(*args))
    assert gc.isenabled()
    assert not failed_suites(check_release(clean))
    assert seen and not any(seen) and gc.isenabled()


def test_a_null_required_field_fails_the_tasks_suite(clean):
    broken = copy.deepcopy(clean)
    _change_task(broken, 1, prompt=None)
    failures = _failures(broken)
    assert list(failures) == ["tasks"]
    assert any("expect_column_values_to_not_be_null" in f and "'prompt'" in f for f in failures["tasks"])


def test_a_subset_specific_required_field_is_checked_only_where_it_applies(clean):
    broken = copy.deepcopy(clean)
    _change_task(broken, 0, entry_point=None)  # an MBPP task needs its entry point
    _change_task(broken, 1, database=None)  # MBPP tasks have no database: fine
    failures = _failures(broken)
    assert len(failures["tasks"]) == 1 and "'entry_point'" in failures["tasks"][0]


def test_a_task_id_released_twice_for_one_dialect_fails(clean):
    broken = copy.deepcopy(clean)
    broken.tasks[2] = _task("mbpp/1", "oracle")  # mbpp/1 twice in Oracle, mbpp/2 gone from Oracle
    failures = _failures(broken)["tasks"]
    assert any("expect_compound_columns_to_be_unique" in f and "2 unexpected" in f for f in failures)


def test_an_unknown_enumeration_value_fails(clean):
    broken = copy.deepcopy(clean)
    _change_task(broken, 0, replay_status="failed")
    broken.tables["rejections.parquet"][0][0]["level"] = "database"
    failures = _failures(broken)
    assert any("replay_status" in f and "['failed']" in f for f in failures["tasks"])
    assert any("'level'" in f and "['database']" in f for f in failures["rejections"])


def test_an_unparsable_json_column_fails(clean):
    broken = copy.deepcopy(clean)
    _change_task(broken, 3, test_cases='[{"args": [1]')
    broken.tables["databases.parquet"][0][1]["decisions"] = "{not json"
    failures = _failures(broken)
    assert any("expect_column_values_to_be_json_parseable" in f and "'test_cases'" in f for f in failures["tasks"])
    assert any("'decisions'" in f for f in failures["databases"])


def test_counts_differing_from_the_manifest_fail(clean):
    broken = copy.deepcopy(clean)
    broken.manifest["subsets"]["mbpp"]["released"]["postgres"] = 3
    broken.manifest["subsets"]["mbpp"]["rejected"] = {"malformed_record": 2}
    broken.manifest["types"] = {"postgres": 1, "oracle": 1}
    broken.manifest["normalization"]["spider1"]["rows"] = 10
    failures = _failures(broken)
    assert set(failures) == {"tasks", "rejections", "types", "databases"}
    assert any("dialect == 'postgres'" in f and "value=3" in f and "observed 2" in f for f in failures["tasks"])
    assert any("observed 1" in f for f in failures["rejections"])
    assert any("expect_column_sum_to_be_between" in f and "'rows'" in f for f in failures["databases"])


def test_rows_that_do_not_fit_the_schema_fail_instead_of_being_skipped(clean):
    broken = copy.deepcopy(clean)
    broken.tables["types.parquet"][0][0]["tasks"] = "many"
    assert _failures(broken)["types"][0].startswith("suite not run")


def test_row_local_expectations_over_runs_of_rows_report_what_one_frame_reports(clean):
    # Runs of one row each: unexpected counts add up across runs, and uniqueness still sees every row.
    broken = copy.deepcopy(clean)
    _change_task(broken, 0, prompt=None)
    _change_task(broken, 3, prompt=None)
    broken.tasks[2] = _task("mbpp/1", "oracle")
    broken.tables["databases.parquet"][0][1]["decisions"] = "{not json"
    by_row, whole = check_release(broken, max_bytes=1), check_release(broken, max_bytes=2**40)
    assert by_row == whole
    assert any("'prompt'" in f and "2 unexpected" in f for f in by_row["tasks"]["failures"])
    assert any("expect_compound_columns_to_be_unique" in f and "2 unexpected" in f for f in by_row["tasks"]["failures"])
    assert by_row["databases"]["failed"] == 1 and "'decisions'" in by_row["databases"]["failures"][0]


def test_suites_see_text_as_python_strings_and_nulls_as_missing():
    # Arrow-backed text (pandas 3's default) made every row selection GX does copy the text's bytes.
    schema = pa.schema([("name", pa.string()), ("count", pa.int64())])
    frame = table_frame([{"name": "a", "count": 1}, {"name": None, "count": None}], schema)
    assert frame["name"].dtype == object
    assert frame["name"].tolist()[0] == "a" and frame["name"].isna().tolist() == [False, True]
    assert frame["count"].isna().tolist() == [False, True]


def test_a_where_on_a_column_the_table_lacks_fails_the_suite_instead_of_selecting_nothing(clean):
    suite = {
        "suite": "types",
        "expectations": [
            {"expectation": "expect_table_row_count_to_equal", "kwargs": {"value": 0}, "where": {"dialekt": "oracle"}}
        ],
    }
    rows, schema = clean.tables["types.parquet"]
    report = run_suite(suite, rows, schema, clean.manifest)
    assert not report["success"] and "not columns of the table" in report["failures"][0]


def test_an_expectation_is_row_local_only_without_a_fraction_of_the_whole_table():
    assert is_row_local("expect_column_values_to_be_in_set", {"column": "a", "value_set": [1]})
    assert not is_row_local("expect_column_values_to_be_in_set", {"column": "a", "value_set": [1], "mostly": 0.9})
    assert not is_row_local("expect_compound_columns_to_be_unique", {"column_list": ["a", "b"]})
    assert columns_read({"column_list": ["a", "b"], "column_A": "c"}) == {"a", "b", "c"}


def test_a_where_selects_rows_by_value_or_list_of_values_and_reads_as_a_failure_line_names_it():
    where = {"subset": "mbpp", "dialect": ["oracle", "postgres"]}
    assert selects(where, {"subset": "mbpp", "dialect": "oracle"})
    assert not selects(where, {"subset": "mbpp", "dialect": None})
    assert not selects(where, {"dialect": "oracle"})
    assert where_text(where) == "subset == 'mbpp' and dialect in ['oracle', 'postgres']"


def test_suite_files_expand_per_column_and_manifest_group(clean):
    configs = expand_suite(load_suite("tasks"), clean.manifest)
    counts = [(kw["value"], where) for kind, kw, where in configs if kind == "expect_table_row_count_to_equal"]
    assert counts == [
        (2, {"subset": "mbpp", "dialect": "oracle"}),
        (2, {"subset": "mbpp", "dialect": "postgres"}),
        (4, None),
    ]
    not_null = {kw["column"] for kind, kw, _ in configs if kind == "expect_column_values_to_not_be_null"}
    assert {"task_id", "prompt", "entry_point", "database"} <= not_null


# ---- metadata accuracy ---------------------------------------------------------------------------

PACKAGE = """CREATE OR REPLACE PACKAGE BODY billing AS
  PROCEDURE close_month IS
    CURSOR late IS SELECT i.id FROM invoice i WHERE i.paid = 0;
    TYPE id_tab IS TABLE OF NUMBER;
    ids id_tab;
    n NUMBER;
  BEGIN
    SELECT COUNT(*) INTO n FROM payment p WHERE p.month = 5;
    OPEN late; FETCH late BULK COLLECT INTO ids; CLOSE late;
    EXECUTE IMMEDIATE 'TRUNCATE TABLE staging';
  EXCEPTION WHEN OTHERS THEN NULL; -- FOR r IN (SELECT 1 FROM ghost) LOOP
  END;
END billing;"""


def test_the_detector_finds_each_construct_and_ignores_comments_and_literals():
    assert detect_constructs(PACKAGE) == {
        "select_into",
        "package",
        "procedure",
        "explicit_cursor",
        "collection_type",
        "bulk_operation",
        "dynamic_sql",
        "exception_handler",
    }
    block = "DO $$\nBEGIN\n  RAISE NOTICE 'FOR r IN SELECT LOOP EXCEPTION WHEN';\nEND\n$$;"
    assert detect_constructs(block) == {"anonymous_block"}
    pg = (
        "CREATE TYPE plb_rec AS (f1 bigint);\nCREATE OR REPLACE FUNCTION f(xs bigint[]) RETURNS plb_rec "
        "LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('SELECT %s', 1); END $$;"
    )
    assert detect_constructs(pg) == {"object_type", "collection_type", "function", "dynamic_sql"}


def test_the_detector_finds_what_a_procedure_does_in_either_dialect():
    pg = (
        "CREATE PROCEDURE sp_flag(para_score bigint)\nLANGUAGE plpgsql\nAS $plb$\nDECLARE\n  v_n bigint;\nBEGIN\n"
        "  SELECT COUNT(*) INTO v_n FROM customer WHERE score > para_score;\n  IF v_n = 0 THEN\n"
        "  RAISE EXCEPTION 'no row' USING ERRCODE = 'PLB01';\nELSE\n  DELETE FROM report;\n"
        "  INSERT INTO report (name) SELECT name FROM customer WHERE score > para_score;\n"
        "  UPDATE customer AS c SET flag = 1 WHERE score > para_score;\nEND IF;\nEND;\n$plb$;"
    )
    assert detect_constructs(pg) == {
        "procedure",
        "select_into",
        "if_else",
        "raise_error",
        "dml_delete",
        "dml_insert",
        "dml_update",
    }
    oracle = (
        "CREATE OR REPLACE PROCEDURE sp_flag(para_score IN customer.score%TYPE)\nIS\n  v_n NUMBER;\nBEGIN\n"
        "  UPDATE customer SET flag = 1 WHERE score > para_score;\n"
        "  RAISE_APPLICATION_ERROR(-20001, 'IF x THEN');\nEND sp_flag;"
    )
    assert detect_constructs(oracle) == {"procedure", "dml_update", "raise_error"}
    assert detect_constructs("INSERT INTO t SELECT a FROM s; -- DELETE FROM t") == {"dml_insert"}


def test_tables_and_columns_come_from_the_embedded_sql():
    tables, columns, errors = referenced_schema(PACKAGE, "oracle")
    assert errors == [] and tables == {"invoice", "payment"}
    assert columns == {"invoice.id", "invoice.paid", "payment.month"}
    assert "ghost" not in " ".join(embedded_queries(PACKAGE))  # inside a comment


def test_spider_reference_blocks_match_their_claims_in_both_dialects():
    query = 'SELECT c.name, count(*) FROM customer AS c JOIN "order" o ON o.customer_id = c.id GROUP BY c.name'
    pg = reference_block("postgres", query, ["text", "integer"])
    ora = reference_block("oracle", "SELECT name, score FROM customer ORDER BY score DESC", ["text", "number"])
    assert referenced_schema(pg, "postgres")[:2] == (
        {"customer", "order"},
        {"customer.name", "customer.id", "order.customer_id"},
    )
    assert referenced_schema(ora, "oracle")[:2] == ({"customer"}, {"customer.name", "customer.score"})
    for code, dialect in ((pg, "postgres"), (ora, "oracle")):
        row = {
            "task_id": "spider_plsql/1",
            "dialect": dialect,
            "reference_code": code,
            "plsql_constructs": ["anonymous_block", "cursor_for_loop"],
        }
        findings = row_findings(row)
        assert findings["constructs_under"] == findings["constructs_over"] == findings["wrong"] == []


@pytest.mark.parametrize("dialect", ["postgres", "oracle"])
@pytest.mark.parametrize(
    "cases",
    [
        [(([[1, 2], [3]],), 3)],  # a list of lists: PostgreSQL wraps the inner list in a composite
        [(([(1, "a")],), {"a": 1})],
        [((1, "x"), "x1")],
    ],
)
def test_mbpp_claims_agree_with_the_emitted_setup_and_scaffold(dialect, cases):
    from plbench.mbpp.stages import emit_artifacts
    from plbench.subsets.mbpp import plsql_constructs

    task = typed_task(["x"] if len(cases[0][0]) == 1 else ["a", "b"], cases)
    art = emit_artifacts(task, dialect)
    row = {
        "task_id": task.task_id,
        "dialect": dialect,
        "setup_sql": art.setup_sql,
        "scaffold": art.scaffold,
        "plsql_constructs": list(plsql_constructs(task, dialect)),
    }
    findings = row_findings(row)
    assert (findings["constructs_under"], findings["constructs_over"], findings["wrong"]) == ([], [], [])


def test_a_bare_gold_query_is_not_the_code_claims_are_checked_against():
    """A Spider 2.0 gold that could not be wrapped in a block is the query a solution runs: the
    claims are checked against the scaffold the solution fills in (a block, with no cursor loop)."""
    row = {
        "task_id": "spider2/x",
        "dialect": "postgres",
        "reference_code": "SELECT 1",
        "scaffold": "DO $$\nBEGIN\n  -- RAISE NOTICE '%', <one result row>;\nEND\n$$;",
        "plsql_constructs": ["anonymous_block"],
    }
    for gold in ("SELECT a FROM t ORDER BY a", "CREATE TEMPORARY FUNCTION f(x INT) RETURNS INT AS (x); SELECT f(1)"):
        findings = row_findings(dict(row, reference_code=gold))
        assert (findings["source"], findings["constructs_under"], findings["constructs_over"]) == (
            "setup_sql+scaffold",
            [],
            [],
        )
    claimed_loop = row_findings(
        dict(row, reference_code="SELECT 1", plsql_constructs=["anonymous_block", "cursor_for_loop"])
    )
    assert claimed_loop["constructs_over"] == ["cursor_for_loop"]
    block = "DO $$\nBEGIN\n  FOR r IN SELECT a FROM t LOOP\n    RAISE NOTICE '%', r.a;\n  END LOOP;\nEND\n$$;"
    assert row_findings(dict(row, reference_code=block))["constructs_under"] == ["cursor_for_loop"]


def test_under_over_and_plainly_wrong_claims_are_reported_per_task():
    rows = [
        {
            "task_id": "x/1",
            "dialect": "oracle",
            "reference_code": PACKAGE,
            "plsql_constructs": ["package", "procedure", "explicit_cursor", "function"],
            "tables_required": ["INVOICE", "audit_log"],
            "columns_required": ["invoice.id", "paid", "audit_log.at"],
        },
        {
            "task_id": "x/2",
            "dialect": "oracle",
            "reference_code": PACKAGE,
            "plsql_constructs": ["magic"],
            "tables_required": ["audit_log"],
            "columns_required": [],
        },
    ]
    report = metadata_accuracy(rows)
    first = report["examples"]
    assert first["constructs_over"]["x/1/oracle"] == ["function"]
    assert "dynamic_sql" in first["constructs_under"]["x/1/oracle"]
    assert first["tables_under"]["x/1/oracle"] == ["payment"] and first["tables_over"]["x/1/oracle"] == ["audit_log"]
    assert first["columns_over"]["x/1/oracle"] == ["audit_log.at"]
    assert first["columns_under"]["x/1/oracle"] == ["payment.month"]
    assert report["tasks_with"]["constructs_over"] == 1 and report["rows_with_schema_claims"] == 2
    assert report["plainly_wrong_count"] == 1
    assert any("unknown constructs ['magic']" in w for w in report["plainly_wrong"]["x/2/oracle"])
    assert any("names none of the tables" in w for w in report["plainly_wrong"]["x/2/oracle"])
    assert json.dumps(report)  # it goes into manifest.json


def test_the_blocking_check_fails_on_a_failed_suite_and_names_the_failures(clean):
    from assets.release import quality_suites

    broken = copy.deepcopy(clean)
    _change_task(broken, 0, dialect="mysql")
    broken.manifest["quality"] = check_release(broken)
    result = quality_suites(broken)
    assert result.passed is False
    assert any("'dialect'" in f and "mysql" in f for f in result.metadata["failures"].data["tasks"])
    clean_copy = copy.deepcopy(clean)
    clean_copy.manifest["quality"] = check_release(clean_copy)
    assert quality_suites(clean_copy).passed is True


def test_the_warm_up_thread_and_a_suite_starting_meanwhile_share_one_gx_context():
    _new_batch_definition.cache_clear()
    thread = warm_up()
    built = _batch_definition()  # while the thread builds it: waits for that one
    thread.join(60)
    assert not thread.is_alive()
    assert _new_batch_definition.cache_info().misses == 1
    assert _batch_definition() is built
