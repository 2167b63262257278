"""Procedural seeds on a real PostgreSQL: lifting, each archetype, call suites, determinism, mutants, grading."""

from __future__ import annotations

import dataclasses
import pickle
import threading

import pytest

from plbench.dialects.static_checks import check_block_structure
from plbench.engines import pg_session
from plbench.procedures.build import context
from plbench.procedures.grade import ProcedureTask, grade, row_difference
from plbench.procedures.lift import LiftError, lift
from plbench.procedures.model import Sql, walk
from plbench.procedures.mutants import OPERATORS, drop_dml, mutants_of
from plbench.procedures.parallel import each_database
from plbench.procedures.seeds import not_seedable
from plbench.procedures.strength import fails_suite, measure, text_columns, trivial_candidates
from plbench.procedures.suites import CallSuite, call_text, run_seed
from plbench.procedures.workspace import DatabaseCopy, Workspace


@pytest.fixture
def workspace(pg_engine, fixture):
    with pg_engine.session(reads=(fixture.pg.schema_name,)) as session:
        yield Workspace(session, fixture.pg)


def _calls(validated) -> list[str]:
    return [r.call for r in validated.suite.expected]


# ---- lifting ---------------------------------------------------------------------------------


def test_lift_types_parameters_from_the_compared_columns(fixture):
    g = fixture.equivalence[2]
    lifted = lift("train/3", "", g.query.sql, g.postgres_sql, g.oracle_sql, fixture.pg, fixture.oracle)
    assert [(p.name, p.type["postgres"], p.gold_value, p.nullable) for p in lifted.params] == [
        ("para_city", "text", "Paris", True),
        ("para_amount", "double precision", 10.0, True),
    ]
    assert lifted.trees["postgres"].sql("postgres").endswith("WHERE T1.city = para_city AND T2.amount >= para_amount")
    assert lifted.trees["oracle"].sql("oracle").endswith("WHERE T1.CITY = para_city AND T2.AMOUNT >= para_amount")
    assert lifted.tables == ("customer", "orders")


def test_a_query_without_literals_is_rejected_with_its_reason(fixture, seed_build):
    g = fixture.equivalence[3]
    with pytest.raises(LiftError) as err:
        lift("train/4", "", g.query.sql, g.postgres_sql, g.oracle_sql, fixture.pg, fixture.oracle)
    assert err.value.reason_code == "no_liftable_literal"
    assert ("train/4", "no_liftable_literal") in {(r.source_id, r.reason_code) for r in seed_build.rejections}


# ---- one test per archetype --------------------------------------------------------------------


def test_result_table_replaces_the_report_each_call(seeds):
    v = seeds["procfix/train/1/result_table"]
    assert v.seed.procedure.render("postgres") == (
        "CREATE PROCEDURE sp_report_customer(para_score bigint)\nLANGUAGE plpgsql\nAS $plb$\nBEGIN\n"
        "  DELETE FROM customer_report;\n"
        "  INSERT INTO customer_report (name) SELECT name FROM customer WHERE score > para_score;\nEND;\n$plb$;"
    )
    assert v.seed.setup["postgres"] == ["CREATE TABLE customer_report (name text)"]
    assert _calls(v) == [f"CALL sp_report_customer(CAST({n} AS bigint))" for n in (50, 20, 70, 90)]
    # score > 50: Ann, Dee; > 20: four (the tie at 50 counts twice); > 70: Dee; > 90: nobody
    assert [r.state["customer_report"][0] for r in v.suite.expected] == [2, 4, 1, 0]
    assert all(r.state["customer"] == v.suite.initial["customer"] for r in v.suite.expected)


def test_summary_row_appends_the_arguments_and_the_aggregate(seeds):
    v = seeds["procfix/train/2/summary_row"]
    assert v.seed.procedure.render("postgres").splitlines()[4] == (
        "  INSERT INTO orders_summary (arg_status, result_value) VALUES "
        "(para_status, (SELECT COUNT(*) FROM orders WHERE status = para_status));"
    )
    assert v.suite.args == (("open",), ("closed",), ("zz plbench: matches nothing",), (None,))
    assert [r.state["orders_summary"][0] for r in v.suite.expected] == [1, 2, 3, 4]


def test_status_update_flags_the_rows_the_predicate_selects(seeds, workspace):
    v = seeds["procfix/train/1/status_update"]
    assert v.seed.setup["postgres"] == [
        "ALTER TABLE customer ADD COLUMN review_status text DEFAULT 'unreviewed'",
        "ALTER TABLE customer ADD COLUMN review_count bigint DEFAULT 0",
    ]
    flagged = []

    def look(index, result):
        q = workspace.query("SELECT id, review_status, review_count FROM customer ORDER BY id")
        flagged.append([r for r in q.rows if r[2]])
        return True

    workspace.run(v.seed.setup["postgres"], v.seed.procedure.render("postgres"), _calls(v), v.seed.writes, look)
    assert flagged == [
        [(1, "selected", 1), (4, "selected", 1)],
        [(1, "selected", 2), (2, "selected", 1), (3, "selected", 1), (4, "selected", 2)],
        [(1, "selected", 2), (2, "selected", 1), (3, "selected", 1), (4, "selected", 3)],
    ]


def test_raise_missing_raises_the_defined_error_per_dialect(seeds):
    v = seeds["procfix/train/2/raise_missing"]
    assert [r.error for r in v.suite.expected] == [None, None, "PLB01", "PLB01"]
    pg, oracle = v.seed.procedure.render("postgres"), v.seed.procedure.render("oracle")
    assert "RAISE EXCEPTION 'no row of orders has status equal to the argument' USING ERRCODE = 'PLB01';" in pg
    assert "RAISE_APPLICATION_ERROR(-20001, 'no row of orders has status equal to the argument');" in oracle
    assert oracle.startswith(
        "CREATE OR REPLACE PROCEDURE sp_checked_report_orders(para_status IN ORDERS.STATUS%TYPE)\nIS\n"
        "  v_matches NUMBER;\nBEGIN\n  SELECT COUNT(*) INTO v_matches FROM ORDERS WHERE STATUS = para_status;"
    )
    assert check_block_structure(oracle) == [] and check_block_structure(pg) == []
    assert call_text(v.seed, ("open",), "oracle") == "BEGIN sp_checked_report_orders('open'); END;"
    # the error leaves the state as it was: the report of call 2 is still there
    assert v.suite.expected[2].state == v.suite.expected[1].state


def test_every_seed_has_a_numbered_exhaustive_requirement(seeds):
    lines = seeds["procfix/train/3/raise_missing"].seed.requirement_lines
    assert lines[1] == "It reads `customer`, `orders`; it writes only `customer_report`; no other table changes."
    assert "SQLSTATE 'PLB01'" in lines[3] and "RAISE_APPLICATION_ERROR(-20001, ...)" in lines[3]
    assert lines[4].startswith("Otherwise: each call first removes every row of `customer_report`")


# ---- call suites -------------------------------------------------------------------------------


def test_calls_that_change_nothing_are_dropped(seeds):
    v = seeds["procfix/train/1/status_update"]
    # 90 and the no-match value flag nobody, NULL matches nothing: three calls remain
    assert v.suite.args == ((50,), (20,), (70,))


def test_a_reference_that_depends_on_physical_order_is_rejected(seed_build):
    reasons = {r.source_id: (r.reason_code, r.detail) for r in seed_build.rejections}
    code, detail = reasons["procfix/train/5/result_table"]
    assert code == "nondeterministic"
    assert detail.startswith("a physically shuffled copy: call 1")


# ---- suite strength ------------------------------------------------------------------------------


def test_a_suite_that_cannot_tell_a_predicate_from_its_flip_is_rejected(seed_build):
    reasons = {r.source_id: (r.reason_code, r.detail) for r in seed_build.rejections}
    code, detail = reasons["procfix/train/7/summary_row"]  # archive is empty: the count is 0 either way
    assert code == "weak_suite"
    assert detail == (
        "2/4 mutants killed; survivors: relational_flip: operator flipped: id = para_id; "
        "boundary_plus_one: argument + 1: para_id"
    )
    assert reasons["procfix/train/7/raise_missing"][0] == "suite_only_errors"


OPERATOR_CASES = {
    "relational_flip": ("procfix/train/1/result_table", "WHERE score < para_score;"),
    "boundary_shift": ("procfix/train/3/result_table", "T2.amount > para_amount"),
    "drop_conjunct": ("procfix/train/3/result_table", "WHERE T1.city = para_city;"),
    "swap_if": ("procfix/train/2/raise_missing", "  IF v_matches = 0 THEN\n    DELETE FROM orders_report;"),
    "drop_dml": ("procfix/train/1/result_table", "BEGIN\n  INSERT INTO customer_report"),
    "wrong_target_column": ("procfix/train/1/status_update", "SET name = 'selected'"),
    "boundary_plus_one": ("procfix/train/6/raise_missing", "WHERE customer_id = para_customer_id + 1;"),
}


@pytest.mark.parametrize("operator", [name for name, _ in OPERATORS])
def test_each_mutant_operator_makes_a_mutant_the_suite_kills(operator, seeds, workspace):
    seed_id, text = OPERATOR_CASES[operator]
    v = seeds[seed_id]
    make = dict(OPERATORS)[operator]
    mutants = make(v.seed.procedure, {"text_columns": text_columns(workspace, v.seed)})
    rendered = [m.procedure.render("postgres") for m in mutants]
    assert any(text in r for r in rendered), rendered
    strength = measure(workspace, v.seed, v.suite)
    assert strength.by_operator[operator][1] == strength.by_operator[operator][0] > 0


def test_boundary_plus_one_needs_a_number_equality(seeds):
    assert dict(OPERATORS)["boundary_plus_one"](seeds["procfix/train/1/result_table"].seed.procedure, {}) == []


def test_trivial_candidates_fail_every_seed(seeds, workspace):
    for v in seeds.values():
        assert set(trivial_candidates(v.seed, v.suite)) == {"noop", "first_call_only", "state_change_removed"}
        assert measure(workspace, v.seed, v.suite).trivial_passed == [], v.seed.seed_id


def test_remeasuring_a_longer_suite_runs_only_what_its_first_calls_let_pass(seeds, workspace):
    """measure(..., previous) after strengthening: the same figures as measuring from scratch."""
    compared = 0
    for v in seeds.values():
        prefix = CallSuite(v.suite.args[:1], v.suite.expected[:1], v.suite.initial)
        first = measure(workspace, v.seed, prefix)
        if not (first.surviving or first.trivial_passed):
            continue
        again, fresh = measure(workspace, v.seed, v.suite, first), measure(workspace, v.seed, v.suite)
        assert (again.total, again.killed, again.by_operator, again.survivors, again.trivial_passed) == (
            fresh.total,
            fresh.killed,
            fresh.by_operator,
            fresh.survivors,
            fresh.trivial_passed,
        ), v.seed.seed_id
        compared += 1
    assert compared >= 3


def test_the_adapters_start_from_the_verdicts_measure_found(seeds, workspace, fixture):
    """Strength.verdicts holds fails_suite's answer on the final suite for every mutant and trivial candidate
    (a strengthened suite's earlier kills included), and each seed's adapter context starts from a copy."""
    compared = 0
    for v in seeds.values():
        mutants = mutants_of(v.seed.procedure, {"text_columns": text_columns(workspace, v.seed)})
        texts = [m.procedure.render("postgres") for m in mutants]
        texts += [p.render("postgres") for p in trivial_candidates(v.seed, v.suite).values()]
        assert set(v.strength.verdicts) == set(texts), v.seed.seed_id
        for text in texts:
            assert v.strength.verdicts[text] == fails_suite(workspace, v.seed, v.suite, text), v.seed.seed_id
            compared += 1
        ctx = context(v, fixture.pg, fixture.oracle, workspace, frozenset({"postgres"}))
        assert ctx.verdicts == v.strength.verdicts and ctx.verdicts is not v.strength.verdicts
    assert compared > 50
    runs: list[int] = []
    assert [ctx.once("rerun", lambda: runs.append(1) or "shown") for _ in range(2)] == ["shown"] * 2 and runs == [1]


def test_reading_only_the_written_tables_gives_every_tables_state_as_a_full_read(seeds, workspace):
    """run_seed reads only the seed's tables after each call: for the reference, every mutant and every
    trivial candidate the per-call state of every table is what reading all of them gives."""
    compared = 0
    for v in seeds.values():
        procedures = [v.seed.procedure] + [m.procedure for m in mutants_of(v.seed.procedure, {})]
        procedures += list(trivial_candidates(v.seed, v.suite).values())
        for procedure in procedures:
            text, setup = procedure.render("postgres"), v.seed.setup["postgres"]
            full = workspace.run(setup, text, _calls(v), v.seed.writes)
            partial = run_seed(workspace, v.seed, _calls(v), text)
            assert [c.observed() for c in partial.calls] == [c.observed() for c in full.calls], v.seed.seed_id
            assert set(partial.calls[0].state) == set(workspace.tables) | set(v.seed.writes)
            compared += 1
    assert compared > 50


# ---- grading -------------------------------------------------------------------------------------


def _task(v, fixture) -> ProcedureTask:
    return ProcedureTask(
        v.seed.seed_id,
        DatabaseCopy.of(fixture.pg),
        tuple(v.seed.setup["postgres"]),
        v.seed.procedure.render("postgres"),
        tuple(_calls(v)),
        tuple(r.observed() for r in v.suite.expected),
        v.seed.writes,
    )


def test_the_reference_passes_every_call(pg_engine, seeds, fixture):
    v = seeds["procfix/train/3/raise_missing"]
    result = grade(pg_engine, _task(v, fixture), v.seed.procedure.render("postgres"))
    assert result.passed and result.call_verdicts == ["pass"] * len(v.suite.expected)


def test_touching_another_table_fails_and_names_it(pg_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]
    candidate = v.seed.procedure.render("postgres").replace(
        "END;\n$plb$;", "  UPDATE orders SET status = 'seen' WHERE order_id = 10;\nEND;\n$plb$;"
    )
    result = grade(pg_engine, _task(v, fixture), candidate)
    assert not result.passed
    assert result.detail == "state differs after call 1: table orders, 1 row changed"
    assert result.call_verdicts == ["fail"] * 4
    assert result.category == "wrong_logic_or_output"


def test_failing_only_call_3_gets_those_verdicts(pg_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]  # calls with 50, 20, 70, 90
    candidate = v.seed.procedure.render("postgres").replace(
        "WHERE score > para_score;", "WHERE score > para_score OR (para_score = 70 AND score = 20);"
    )
    result = grade(pg_engine, _task(v, fixture), candidate)
    assert result.call_verdicts == ["pass", "pass", "fail", "pass"]
    assert result.detail == "state differs after call 3: table customer_report, 1 row added"


def test_a_candidate_that_does_not_install_is_an_invalid_artifact(pg_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]
    result = grade(pg_engine, _task(v, fixture), "CREATE PROCEDURE sp_report_customer(")
    assert not result.passed and result.category == "invalid_artifact"
    assert result.detail.startswith("does not install: 42601")


def test_a_candidate_that_commits_fails_the_call(pg_engine, seeds, fixture):
    v = seeds["procfix/train/1/result_table"]
    candidate = v.seed.procedure.render("postgres").replace("END;\n$plb$;", "  COMMIT;\nEND;\n$plb$;")
    result = grade(pg_engine, _task(v, fixture), candidate)
    assert not result.passed and result.detail.startswith("call 1: expected no error, got error 2D000")


@pytest.mark.parametrize(
    "tampering, detail",
    [
        # the call itself drops a table: the state read after it fails, so the call's work is undone and
        # the call gets the error, as if it had raised it
        ("DROP TABLE archive;", "call 1: expected no error, got error 42P01"),
        # a table replaced by a view during the install is read, and reported, as tampered with
        ("", "state unreadable after call 1: table archive was replaced or hidden"),
    ],
)
def test_a_candidate_that_drops_or_replaces_a_table_fails_the_call(pg_engine, seeds, fixture, tampering, detail):
    v = seeds["procfix/train/1/result_table"]
    candidate = v.seed.procedure.render("postgres").replace("END;\n$plb$;", f"  {tampering}\nEND;\n$plb$;")
    if not tampering:
        candidate += "\nDROP TABLE archive; CREATE VIEW archive AS SELECT 1 AS id, 'x'::text AS note;"
    result = grade(pg_engine, _task(v, fixture), candidate)
    assert not result.passed and result.detail.startswith(detail), result.detail
    assert result.call_verdicts == ["fail"] * 4


def test_a_setup_that_does_not_parse_leaves_the_workspace_whole(seeds, workspace):
    """The setup runs on its own round trip: a string that does not parse runs nothing, not even a savepoint."""
    v = seeds["procfix/train/1/result_table"]
    broken = workspace.run(["CREATE TABLE plb_broken (column int)"], v.seed.procedure.render("postgres"), [])
    assert broken.install_error.startswith("42601: syntax error")
    again = workspace.run(v.seed.setup["postgres"], v.seed.procedure.render("postgres"), _calls(v), v.seed.writes)
    assert [c.observed() for c in again.calls] == [r.observed() for r in v.suite.expected]


def test_built_runs_keep_their_setup_and_give_what_a_plain_run_gives(seeds, workspace):
    """run_built leaves the setup applied for the next run of the same setup; a procedure that does not
    install leaves it whole, a query in between sees the plain copy, and a setup that fails fails every run."""
    v = seeds["procfix/train/1/status_update"]
    text, setup, expected = v.seed.procedure.render("postgres"), v.seed.setup["postgres"], v.suite.expected
    assert [c.observed() for c in run_seed(workspace, v.seed, _calls(v)).calls] == [r.observed() for r in expected]
    assert run_seed(workspace, v.seed, _calls(v), "CREATE PROCEDURE broken(").install_error.startswith("42601")
    again = run_seed(workspace, v.seed, _calls(v), text)
    assert [c.observed() for c in again.calls] == [r.observed() for r in expected]
    assert "review_status" not in workspace.query("SELECT * FROM customer LIMIT 0").columns
    plain = workspace.run(setup, text, _calls(v), v.seed.writes)
    assert [c.observed() for c in plain.calls] == [r.observed() for r in expected]
    broken = workspace.run_built(["CREATE TABLE plb_broken (column int)"], text, _calls(v), v.seed.writes)
    assert broken.install_error.startswith("42601: syntax error") and not broken.calls
    assert workspace.run_built(["CREATE TABLE plb_broken (column int)"], text, [], ()).install_error == (
        broken.install_error
    )
    assert [c.observed() for c in run_seed(workspace, v.seed, _calls(v)).calls] == [r.observed() for r in expected]


def test_copy_reads_are_asked_once_until_a_rescale(seeds, workspace, monkeypatch):
    """A read of the plain copy between built runs sees the copy without the setup; asked again, it is answered
    without a round trip (the setup stays applied for the next built run); a rescale changes the copy, so it
    is asked again."""
    v = seeds["procfix/train/1/status_update"]
    run_seed(workspace, v.seed, _calls(v))
    described = workspace.copy_read("SELECT * FROM customer LIMIT 0", own=False)
    assert described.ok and "review_status" not in described.columns
    counted = workspace.copy_read("SELECT pg_catalog.count(*) FROM customer")
    run_seed(workspace, v.seed, _calls(v))
    trips = []
    monkeypatch.setattr(workspace.session, "execute_own", lambda *a, **k: trips.append(a))
    monkeypatch.setattr(workspace.session, "query", lambda *a, **k: trips.append(a))
    assert workspace.copy_read("SELECT * FROM customer LIMIT 0", own=False) is described
    assert workspace.copy_read("SELECT pg_catalog.count(*) FROM customer") is counted and trips == []
    monkeypatch.undo()
    workspace.rescale({"customer": 2})
    assert workspace.copy_read("SELECT pg_catalog.count(*) FROM customer").rows == [(2 * counted.rows[0][0],)]


def test_built_runs_leave_no_savepoint_behind(seeds, workspace):
    """The savepoints the session opens for a built run's install and calls go with the next run's rollback:
    a session of thousands of runs does not nest thousands of subtransactions (PostgreSQL walks every open
    one to see each row the session copied). A mutant that does not install leaves none either."""
    v = seeds["procfix/train/1/status_update"]
    run_seed(workspace, v.seed, _calls(v))
    opened = workspace.session._statements  # the session numbers its savepoints
    run_seed(workspace, v.seed, _calls(v))
    assert run_seed(workspace, v.seed, _calls(v), "CREATE PROCEDURE broken(").install_error.startswith("42601")
    last = workspace.session._statements
    again = run_seed(workspace, v.seed, _calls(v))
    assert [c.observed() for c in again.calls] == [r.observed() for r in v.suite.expected]
    for n in range(opened + 1, last + 1):  # the two runs' savepoints, before the last run's rollback
        released, _ = workspace.session.execute_own(f"RELEASE SAVEPOINT {pg_session._SAVEPOINT}_{n}")
        assert released.error is not None and released.error.code == "3B001", n  # no such savepoint


def test_the_copy_is_written_by_the_transaction_itself(workspace):
    """Not under a savepoint (PostgreSQL walks the open subtransactions to see a row one of them wrote, and the
    copy is read after every call); xmin is the low 32 bits of the transaction's id."""
    own = workspace.read(
        "SELECT count(*) FILTER (WHERE xmin::text::bigint = pg_current_xact_id()::text::bigint % 4294967296), "
        "count(*) FROM customer"
    )
    assert own.rows[0][0] == own.rows[0][1] > 0


def test_a_database_without_rows_gives_no_seed_and_runs_nothing(fixture):
    empty = dataclasses.replace(fixture.pg, tables=[dataclasses.replace(t, rows=[]) for t in fixture.pg.tables])
    out = not_seedable(empty, fixture.equivalence)
    assert not out.seeds and out.considered == 0
    assert [(r.source_id, r.reason_code, r.detail) for r in out.rejections] == [
        (f"train/{i}", "database_empty", "procfix: no table has a row") for i in range(1, 8)
    ]
    assert not_seedable(fixture.pg, fixture.equivalence) is None


def test_row_difference_counts_changed_added_and_removed_rows():
    expected = [("(1)", "(1,a)"), ("(2)", "(2,b)"), ("(3)", "(3,c)")]
    got = [("(1)", "(1,a)"), ("(2)", "(2,x)"), ("(4)", "(4,d)"), ("(5)", "(5,e)")]
    assert row_difference(expected, got) == "1 row changed, 2 rows added, 1 row removed"


def test_the_catalog_gives_the_grader_what_the_normalized_database_does(pg_engine, fixture):
    with pg_engine.session(reads=(fixture.pg.schema_name,)) as session:
        read = DatabaseCopy.introspect(session, fixture.pg.schema_name)
    made = DatabaseCopy.of(fixture.pg)
    assert (sorted(read.tables), read.keys, read.text_columns) == (sorted(made.tables), made.keys, made.text_columns)
    assert made.keys == {"customer": ("id",), "orders": ("order_id",), "archive": ("id",)}


def test_databases_run_side_by_side_and_keep_their_order():
    both = threading.Barrier(2, timeout=10)  # broken, so the test fails, unless two items run at once

    def work(item: int) -> tuple[int, int]:
        if item < 2:
            both.wait()
        return item, item * item

    assert each_database(work, [0, 1, 2, 3], workers=2) == [(0, 0), (1, 1), (2, 4), (3, 9)]
    assert each_database(lambda i: threading.current_thread(), [0, 1], workers=1) == [threading.current_thread()] * 2
    with pytest.raises(ZeroDivisionError):
        each_database(lambda i: 1 // i, [1, 0, 2], workers=2)


def test_a_mutant_that_drops_a_body_s_only_statement_renders_a_null_statement_in_both_dialects(seeds):
    """PL/SQL has no empty block, so the emptied body is `NULL;` (a no-op PL/pgSQL accepts too)."""
    (mutant,) = drop_dml(seeds["procfix/train/1/status_update"].seed.procedure, {})
    assert mutant.procedure.body == ()
    assert mutant.procedure.render("oracle") == (
        "CREATE OR REPLACE PROCEDURE sp_flag_customer(para_score IN CUSTOMER.SCORE%TYPE)\nIS\nBEGIN\n"
        "  NULL;\nEND sp_flag_customer;"
    )
    assert "\nBEGIN\n  NULL;\nEND;\n" in mutant.procedure.render("postgres")


def test_a_stored_seed_renders_without_rebuilding_its_trees(seeds):
    original = seeds["procfix/train/2/summary_row"]
    texts = {d: original.seed.procedure.render(d) for d in original.seed.dialects}
    back = pickle.loads(pickle.dumps(original))
    statements = [s for s in walk(back.seed.procedure.body) if isinstance(s, Sql)]
    assert statements and back.seed.dialects == original.seed.dialects == ("oracle", "postgres")
    # a procedure of the stored statements renders from the texts each statement kept
    assert {d: back.seed.procedure.with_body(back.seed.procedure.body).render(d) for d in texts} == texts
    assert not any(s.trees.loaded for s in statements) and not back.seed.lifted.trees.loaded
    insert = next(s for s in walk(original.seed.procedure.body) if isinstance(s, Sql))
    assert statements[0].trees["postgres"].sql("postgres") == insert.trees["postgres"].sql("postgres")
    assert statements[0].trees.loaded and statements[0] == insert  # a tree read rebuilds them all
    again = pickle.loads(pickle.dumps(back))  # loaded trees are stored again
    assert [s.trees["oracle"] for s in walk(again.seed.procedure.body) if isinstance(s, Sql)] == [
        s.trees["oracle"] for s in statements
    ]
