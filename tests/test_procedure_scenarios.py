"""Scenario adapters on the fixture database: the materials each makes, and each acceptance check failing
on a task that breaks it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import sqlglot

from plbench.procedures.build import context, database_procedures
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.tasks import AdapterRejected
from plbench.procedures.workspace import Workspace
from plbench.subsets import SUBSETS
from plbench.taskrow import as_record
from tests.procedure_fixtures import subset_part


@pytest.fixture(scope="module")
def built(pg_engine, fixture):
    return database_procedures(pg_engine, fixture.pg, fixture.oracle, fixture.equivalence)


@pytest.fixture
def ctx_of(pg_engine, fixture, built):
    seeds = {v.seed.seed_id: v for v in built.seeds.seeds}
    with pg_engine.session(reads=(fixture.pg.schema_name,)) as session:
        workspace = Workspace(session, fixture.pg)
        yield lambda seed_id: context(seeds[seed_id], fixture.pg, fixture.oracle, workspace, frozenset({"postgres"}))


def _task(built, scenario, seed_id, dialect="postgres"):
    return next(t for t in built.tasks if (t.scenario, t.seed_id, t.dialect) == (scenario, seed_id, dialect))


def _rejected(scenario, task, ctx) -> str:
    with pytest.raises(AdapterRejected) as err:
        ADAPTERS[scenario].check(task, ctx)
    return err.value.check


REPORT = "procfix/train/1/result_table"
CHECKED = "procfix/train/2/raise_missing"


def test_every_seed_gets_a_task_per_scenario_and_dialect_or_a_named_rejection(built):
    seeds = len(built.seeds.seeds)
    counts = {}
    for t in built.tasks:
        counts[(t.scenario, t.dialect)] = counts.get((t.scenario, t.dialect), 0) + 1
    rejected = {}
    for r in built.rejections:
        rejected[r.reason_code] = rejected.get(r.reason_code, 0) + 1
    for scenario in ("a1", "a2", "a3", "a4", "b1", "b3", "b4"):
        assert counts[(scenario, "postgres")] == counts[(scenario, "oracle")] == seeds, scenario
    assert counts[("c2", "postgres")] == seeds and ("c2", "oracle") not in counts
    for scenario in ("a5", "c1"):
        assert counts[(scenario, "postgres")] + rejected[f"{scenario}_not_applicable"] == seeds
    b2 = ("b2_not_applicable", "b2_too_little_work", "b2_database_cap")
    assert counts[("b2", "postgres")] == counts[("b2", "oracle")] == seeds - sum(rejected[r] for r in b2) == 2
    assert set(rejected) == {"c1_not_applicable", "a5_not_applicable", *b2}
    assert all(t.replay_status == ("passed" if t.dialect == "postgres" else "not_run") for t in built.tasks)


def test_a1_has_no_attachment_and_names_everything(built, ctx_of):
    task, ctx = _task(built, "a1", CHECKED), ctx_of(CHECKED)
    assert task.materials == {}
    assert "1. Parameters, in this order: `para_status` (the type of `orders.status`)." in task.prompt
    assert "SQLSTATE 'PLB01'" in task.prompt
    assert _rejected("a1", dataclasses.replace(task, materials={"x.md": "hint"}), ctx) == "has_attachment"
    vague = dataclasses.replace(task, prompt=task.prompt.replace("PLB01", "an error"))
    assert _rejected("a1", vague, ctx) == "not_fully_specified"


def test_b1_reverts_one_rule_and_asks_for_it_back(built, ctx_of):
    task, ctx = _task(built, "b1", REPORT), ctx_of(REPORT)
    assert task.materials["change_request.md"] == (
        "# Change request\n\nThe procedure applies one business rule wrongly. Where it currently requires that "
        "`score` is less than `para_score`, the rule is that `score` is greater than `para_score`. Change only "
        "that; every other behaviour stays as it is.\n"
    )
    assert "WHERE score < para_score;" in task.materials["current_procedure.sql"]
    unchanged = dataclasses.replace(task, materials={**task.materials, "current_procedure.sql": task.reference_code})
    assert _rejected("b1", unchanged, ctx) == "current_code_passes"


def test_b3_ships_a_real_compile_error_and_the_observed_behaviour(built, ctx_of):
    task, ctx = _task(built, "b3", REPORT), ctx_of(REPORT)
    assert task.materials["error.txt"] == '42601: syntax error at or near "INOT"\n'
    assert task.materials["observed_behaviour.md"] == (
        "# Observed behaviour\n\nOn the test calls: call 1: fail, call 2: fail, call 3: fail, call 4: fail.\n"
        "First difference: state differs after call 1: table customer_report, 1 row added, 2 rows removed.\n"
    )
    oracle = _task(built, "b3", REPORT, "oracle")
    assert set(oracle.materials) == {"buggy_procedure.sql", "observed_behaviour.md"}
    fixed = dataclasses.replace(task, materials={**task.materials, "buggy_procedure.sql": task.reference_code})
    assert _rejected("b3", fixed, ctx) == "buggy_code_passes"


def test_b4_leaves_a_todo_that_matters(built, ctx_of):
    task, ctx = _task(built, "b4", REPORT), ctx_of(REPORT)
    assert task.materials["incomplete_procedure.sql"].splitlines()[4:6] == [
        "  DELETE FROM customer_report;",
        "  -- TODO: insert the rows the requirement describes",
    ]
    assert "NULL; -- TODO: insert" in _task(built, "b4", REPORT, "oracle").materials["incomplete_procedure.sql"]
    harmless = task.reference_code.replace("DELETE FROM customer_report;", "DELETE FROM customer_report; -- TODO")
    moot = dataclasses.replace(task, materials={"incomplete_procedure.sql": harmless})
    assert _rejected("b4", moot, ctx) == "region_does_not_matter"


def test_c1_core_has_holes_and_the_same_effect(built, ctx_of):
    task, ctx = _task(built, "c1", REPORT), ctx_of(REPORT)
    assert task.materials["core.sql"] == "SELECT name FROM customer WHERE score > <arg1>;\n"
    assert (
        _task(built, "c1", REPORT, "oracle").materials["core.sql"]
        == "SELECT NAME FROM CUSTOMER WHERE SCORE > <arg1>;\n"
    )
    filled = dataclasses.replace(task, materials={**task.materials, "core.sql": "SELECT name FROM customer;\n"})
    assert _rejected("c1", filled, ctx) == "no_holes"
    with pytest.raises(AdapterRejected) as err:
        ADAPTERS["c1"].build(ctx_of("procfix/train/1/status_update"))
    assert err.value.check == "not_applicable"


def test_c1_effect_check_catches_a_reference_that_strays(built, ctx_of):
    ctx = ctx_of(REPORT)
    seed = ctx.seed
    stray = seed.procedure.with_body(seed.procedure.body[:1])  # deletes, never inserts
    strayed = dataclasses.replace(ctx.validated, seed=dataclasses.replace(seed, procedure=stray))
    ctx = dataclasses.replace(ctx, validated=strayed)
    assert _rejected("c1", _task(built, "c1", REPORT), ctx) == "core_effect_differs"


def test_c2_gives_the_oracle_source_and_grades_on_postgres(built, ctx_of):
    task, ctx = _task(built, "c2", CHECKED), ctx_of(CHECKED)
    assert task.materials["source_oracle.sql"] == ctx.seed.procedure.render("oracle")
    assert task.reference_code == ctx.seed.procedure.render("postgres")
    broken = task.materials["source_oracle.sql"].replace("END IF;", "")
    assert _rejected("c2", dataclasses.replace(task, materials={"source_oracle.sql": broken}), ctx) == (
        "source_static_check"
    )


def test_a2_moves_one_fact_into_the_document(built, ctx_of):
    task, ctx = _task(built, "a2", CHECKED), ctx_of(CHECKED)
    assert task.materials["design_document.md"] == (
        "# Design document\n\nError codes: a key that matches nothing raises SQLSTATE 'PLB01' in PostgreSQL and "
        "RAISE_APPLICATION_ERROR(-20001, <message>) in Oracle.\n"
    )
    assert "PLB01" not in task.prompt and "(with the error code the design document gives)" in task.prompt
    coded = dataclasses.replace(task, materials={"design_document.md": "Run DELETE FROM orders_report first."})
    assert _rejected("a2", coded, ctx) == "document_has_code"
    restated = dataclasses.replace(
        task, prompt=task.prompt + "\n(PostgreSQL: SQLSTATE 'PLB01'; Oracle: RAISE_APPLICATION_ERROR(-20001, ...))"
    )
    assert _rejected("a2", restated, ctx) == "fact_still_in_requirement"


def test_a2_fact_must_matter(built, ctx_of, monkeypatch):
    from plbench.procedures.scenarios import a2

    task, ctx = _task(built, "a2", CHECKED), ctx_of(CHECKED)
    same = dataclasses.replace(a2.FACTS["raise_missing"], ignored=lambda proc, table: proc)
    monkeypatch.setitem(a2.FACTS, "raise_missing", same)
    assert _rejected("a2", task, ctx) == "fact_does_not_matter"


def test_a3_examples_show_the_state_and_each_calls_diff(built, ctx_of):
    task, ctx = _task(built, "a3", "procfix/train/1/status_update"), ctx_of("procfix/train/1/status_update")
    shown = task.materials["examples.md"]
    assert "### customer (5 rows)\nid | name | city | score | joined | review_status | review_count\n" in shown
    assert "## Call 1: sp_flag_customer(para_score => 50)\n\nRaises: nothing\n\ncustomer: 2 row(s) changed: " in shown
    assert "1 | review_status: unreviewed -> selected, review_count: 0 -> 1; 4 | review_status" in shown
    assert "## Call 3" not in shown
    leaky = dataclasses.replace(task, materials={"examples.md": shown + "UPDATE customer SET x = 1"})
    assert _rejected("a3", leaky, ctx) == "examples_not_reproduced"
    altered = dataclasses.replace(task, materials={"examples.md": shown.replace("0 -> 1", "0 -> 2")})
    assert _rejected("a3", altered, ctx) == "examples_not_reproduced"


def test_a3_leakage_check_rejects_code():
    from plbench.procedures.scenarios.a3 import LEAKAGE

    assert LEAKAGE.search("then INSERT INTO t VALUES (1)") and LEAKAGE.search("IF x THEN ... END IF")
    assert not LEAKAGE.search("customer: 2 row(s) changed: 1 | review_status: unreviewed -> selected")


def test_a4_template_has_slots_and_no_target_names(built, ctx_of):
    task, ctx = _task(built, "a4", "procfix/train/1/status_update"), ctx_of("procfix/train/1/status_update")
    assert task.materials["template.sql"].splitlines()[0] == "CREATE PROCEDURE {SLOT_1}{SLOT_2}"
    assert (
        "  UPDATE {SLOT_3} SET review_status = 'selected', review_count = review_count + 1 WHERE {SLOT_4};"
        in (task.materials["template.sql"])
    )
    assert task.materials["slots.md"].splitlines()[2:] == [
        "- `{SLOT_1}`: the procedure name `sp_flag_customer`",
        "- `{SLOT_2}`: the parameters `para_score` of the type of `customer.score`",
        "- `{SLOT_3}`: the table `customer`",
        "- `{SLOT_4}`: the condition that `score` is greater than `para_score`",
    ]
    unbound = dataclasses.replace(task, materials={**task.materials, "slots.md": "- `{SLOT_1}`: a name\n"})
    assert _rejected("a4", unbound, ctx) == "slots_do_not_match"
    specific = task.materials["template.sql"].replace("{SLOT_3}", "customer")
    named = dataclasses.replace(task, materials={**task.materials, "template.sql": specific + "{SLOT_3}"})
    assert _rejected("a4", named, ctx) == "target_specific_body"


def test_a5_components_are_installed_and_hold_no_coordination(built, ctx_of):
    task, ctx = _task(built, "a5", CHECKED), ctx_of(CHECKED)
    text = task.materials["components.sql"]
    assert "CREATE PROCEDURE sp_checked_report_orders_part1()\n" in text
    assert "CREATE PROCEDURE sp_checked_report_orders_part2(para_status text)\n" in text
    assert (
        "CREATE OR REPLACE PROCEDURE sp_checked_report_orders_part1\nIS\n"
        in (_task(built, "a5", CHECKED, "oracle").materials["components.sql"])
    )
    assert task.setup_sql[-2:] == tuple(text.strip().split("\n\n"))
    guarded = dataclasses.replace(task, materials={"components.sql": text + "IF v_matches = 0 THEN NULL; END IF;"})
    assert _rejected("a5", guarded, ctx) == "coordination_present"
    broken = dataclasses.replace(
        task, setup_sql=task.setup_sql[:-1] + ("CREATE PROCEDURE sp_checked_report_orders_part2(",)
    )
    assert _rejected("a5", broken, ctx) == "components_not_callable"


@pytest.mark.parametrize("scenario", ["a1", "a5", "b3"])
def test_release_rows_grade_back_from_the_catalog(pg_engine, built, scenario):
    import json

    from plbench.procedures.rows import grade_row, task_row

    row = task_row(_task(built, scenario, CHECKED), "PostgreSQL 16")
    assert (row.subset, row.scenario, row.dialect, row.database) == ("procedures", scenario, "postgres", "procfix")
    assert json.loads(row.test_cases)[0] == "CALL sp_checked_report_orders(CAST('open' AS text))"
    assert row.statements == 5 and row.cyclomatic == 2 and row.mutants_killed == row.mutants_total > 0
    assert row.plsql_constructs == ("dml_delete", "dml_insert", "if_else", "procedure", "raise_error", "select_into")
    passed = grade_row(pg_engine, row, row.reference_code)
    assert passed.passed and passed.call_verdicts == ["pass"] * len(json.loads(row.test_cases))
    scaffold = grade_row(pg_engine, row, row.scaffold)
    assert not scaffold.passed and scaffold.detail.startswith("state differs after call 1: table orders_report")


def test_manifest_section_counts_every_scenario_and_dialect(built):
    from plbench.procedures.summary import below_floor, summarize

    section = summarize([built], ("oracle", "postgres"))
    seeds = len(built.seeds.seeds)
    assert section["seeds"]["validated"] == seeds and section["seeds"]["nondeterministic"] == 1
    a5 = section["scenarios"]["a5/postgres"]
    assert a5["input"] == seeds and a5["released"] + a5["rejected"]["a5_not_applicable"] == seeds
    assert "c2/oracle" not in section["scenarios"] and section["scenarios"]["c2/postgres"]["released"] == seeds
    assert all(v["kill_rate"] == 1.0 for v in section["scenarios"].values())
    assert a5["trivial_candidates_passed"] == 0 and a5["determinism_checked"] == a5["released"] > 0
    assert below_floor(section) == []
    section["scenarios"]["a1/postgres"]["kill_rate"] = 0.9
    assert below_floor(section) == ["a1/postgres: 90.0% of mutants killed"]


# ---- B2 performance optimisation ---------------------------------------------------------------------

FLAGGED = "procfix/train/1/status_update"
B2_WORK = {"scans": 2, "tuples": 10000, "writes": 4000}


def test_b2_baseline_loops_row_by_row_and_records_the_work(built):
    task = _task(built, "b2", REPORT)
    assert task.materials["current_procedure.sql"] == (
        "CREATE PROCEDURE sp_report_customer(para_score bigint)\nLANGUAGE plpgsql\nAS $plb$\nBEGIN\n"
        "  DELETE FROM customer_report;\n  DECLARE\n    plb_row record;\n  BEGIN\n"
        "    FOR plb_row IN SELECT name AS plb_c1 FROM customer WHERE score > para_score LOOP\n"
        "      INSERT INTO customer_report (name) VALUES (plb_row.plb_c1);\n    END LOOP;\n  END;\nEND;\n$plb$;"
    )
    # 5 customers repeated 2,000 times; call 1 (score > 50) inserts 2 x 2,000 rows, one at a time
    assert task.call_suite["performance"] == {
        "scale_rows": 10000,
        "scaled": {"customer": 2000},
        "timed_call": 0,
        "repeats": 4,
        "min_speedup": 1.1,
        "work": {"reference": B2_WORK, "baseline": B2_WORK},
    }
    oracle = _task(built, "b2", FLAGGED, "oracle").materials["current_procedure.sql"]
    assert oracle.splitlines()[3:6] == [
        "  FOR plb_row IN (SELECT ROWID AS plb_rid FROM CUSTOMER WHERE SCORE > para_score) LOOP",
        "    UPDATE CUSTOMER SET review_status = 'selected', review_count = review_count + 1 "
        "WHERE ROWID = plb_row.plb_rid;",
        "  END LOOP;",
    ]


def test_b2_rejects_by_counts_and_caps_the_timed_seeds(built):
    reasons = {(r.source_id, r.reason_code) for r in built.rejections if r.reason_code.startswith("b2_")}
    assert ("b2/procfix/train/2/result_table", "b2_too_little_work") in reasons  # a count: 1 row per call
    assert ("b2/procfix/train/2/summary_row", "b2_not_applicable") in reasons
    capped = [r for r in built.rejections if r.reason_code == "b2_database_cap"]
    tried = [r for r in built.rejections if r.reason_code.startswith("b2_") and r.reason_code != "b2_not_applicable"]
    assert len(tried) - len(capped) + len({t.seed_id for t in built.tasks if t.scenario == "b2"}) == 4


def test_b2_check_refuses_a_baseline_that_is_not_slow_or_not_correct(built, ctx_of):
    task, ctx = _task(built, "b2", REPORT), ctx_of(REPORT)
    fast = dataclasses.replace(task, materials={"current_procedure.sql": task.reference_code})
    assert _rejected("b2", fast, ctx) == "baseline_not_row_by_row"
    wrong = task.materials["current_procedure.sql"].replace("score > para_score", "score >= para_score")
    assert _rejected("b2", dataclasses.replace(task, materials={"current_procedure.sql": wrong}), ctx) == (
        "baseline_incorrect"
    )


def test_b2_row_by_row_leaves_what_it_cannot_rename(built):
    from plbench.procedures.scenarios.b2 import _numbered

    seeds = {v.seed.seed_id: v for v in built.seeds.seeds}
    assert ADAPTERS["b2"].row_by_row(seeds["procfix/train/2/summary_row"].seed.procedure) is None
    ordered = sqlglot.parse_one("SELECT name AS n FROM customer ORDER BY n LIMIT 1", read="postgres")
    assert _numbered(ordered) is None
    plain = sqlglot.parse_one("SELECT name, count(*) FROM customer GROUP BY name", read="postgres")
    assert _numbered(plain).sql() == "SELECT name AS plb_c1, COUNT(*) AS plb_c2 FROM customer GROUP BY name"


@pytest.fixture
def b2_built(pg_engine, fixture, built):
    """`b2_built(seed_id)`: B2's tasks of a seed built again, on a workspace and scaled copy of their own."""
    from plbench.procedures.build import scaled_copies

    seeds = {v.seed.seed_id: v for v in built.seeds.seeds}
    with pg_engine.session(reads=(fixture.pg.schema_name,)) as session, scaled_copies(pg_engine, fixture.pg) as scaled:
        workspace = Workspace(session, fixture.pg)
        yield lambda seed_id: ADAPTERS["b2"].build(
            context(seeds[seed_id], fixture.pg, fixture.oracle, workspace, frozenset({"postgres"}), scaled)
        )


def test_b2_decides_by_counts_so_two_builds_and_a_slowed_clock_give_the_same_rows(built, b2_built, monkeypatch):
    from plbench.procedures.rows import task_row
    from plbench.procedures.scenarios import b2
    from plbench.taskrow import as_record

    def rows(tasks):
        return [json.dumps(as_record(task_row(t, "PostgreSQL 16")), sort_keys=True) for t in tasks]

    reference = _task(built, "b2", REPORT).reference_code
    again = b2_built(REPORT)
    assert rows(again) == rows(t for t in built.tasks if (t.scenario, t.seed_id) == ("b2", REPORT))
    assert set(again[0].measured) == {"reference_s", "baseline_s", "speedup"} and again[0].measured["speedup"] > 0
    timed, repeats = b2.timed, []

    def reference_slowed(workspace, setup, procedure, calls, index, runs):  # as if the machine stalled on it
        repeats.append(runs)
        work = timed(workspace, setup, procedure, calls, index, runs)
        return dataclasses.replace(work, seconds=work.seconds * 1000) if procedure == reference else work

    monkeypatch.setattr(b2, "timed", reference_slowed)
    stalled = b2_built(REPORT)
    assert stalled[0].measured["speedup"] < b2.MIN_SPEEDUP and rows(stalled) == rows(again)
    assert repeats == [2, 2] and again[0].call_suite["performance"]["repeats"] == 4  # grading times 4 runs
    summary = b2.timing_summary(stalled)
    assert summary["tasks"] == 1 and summary["below_1.1"] == 1 and summary["speedup_min"] < 1.1


def test_b2_grading_times_a_passing_candidate_against_reference_and_baseline(pg_engine, built):
    from plbench.procedures.rows import grade_row, task_row

    row = task_row(_task(built, "b2", REPORT), "PostgreSQL 16")
    graded = grade_row(pg_engine, row, row.reference_code)
    assert graded.passed and graded.detail.startswith("B2: ")
    assert graded.metrics["work"] == {"candidate": B2_WORK, "reference": B2_WORK, "baseline": B2_WORK}
    assert set(graded.metrics) == {"speedup_over_baseline", "speedup_over_reference", "seconds", "work"}
    assert all(s > 0 for s in graded.metrics["seconds"].values())
    wrong = grade_row(pg_engine, row, row.scaffold)
    assert not wrong.passed and wrong.metrics == {}  # a wrong candidate is not timed


def test_a_verdict_alone_stops_at_the_first_failing_call_and_needs_no_reference_run(pg_engine, built, monkeypatch):
    from plbench.evaluate import passes
    from plbench.procedures.rows import grade_task, task_row
    from plbench.taskrow import as_record

    row = as_record(task_row(_task(built, "b2", REPORT), "PostgreSQL 16"))
    sessions, session = [], pg_engine.session
    monkeypatch.setattr(pg_engine, "session", lambda reads=(): sessions.append(reads) or session(reads))
    full = grade_task(pg_engine, row, row["scaffold"])
    in_full, sessions[:] = len(sessions), []
    verdict = grade_task(pg_engine, row, row["scaffold"], verdict_only=True)
    # the introspection and the candidate's workspace, without the reference's workspace for the detail
    assert (in_full, len(sessions)) == (3, 2)
    assert not verdict.passed and verdict.call_verdicts == ["fail"] * len(full.call_verdicts)
    assert full.detail.startswith(verdict.detail + ", ") and verdict.detail.startswith("state differs after call 1")
    sessions[:] = []
    timed_less = grade_task(pg_engine, row, row["reference_code"], verdict_only=True)
    assert timed_less.passed and timed_less.metrics == {} and len(sessions) == 2  # B2 times no pass
    assert passes(pg_engine, row, row["reference_code"]) and not passes(pg_engine, row, row["scaffold"])


def _with_first_statements(code: str, statements: str) -> str:
    """A procedure that runs `statements` before its own body."""
    return code.replace("BEGIN", f"BEGIN\n  {statements}", 1)


def test_the_builds_candidates_of_a_task_share_one_copy_and_each_runs_on_the_plain_copy(pg_engine, built, monkeypatch):
    from plbench.evaluate import passes, passes_each
    from plbench.procedures.rows import task_row
    from plbench.taskrow import as_record

    row = as_record(task_row(_task(built, "a1", REPORT), "PostgreSQL 16"))
    wiping = _with_first_statements(row["reference_code"], "DELETE FROM orders; DELETE FROM customer;")
    codes = [wiping, row["reference_code"], row["scaffold"], row["reference_code"]]
    alone = [passes(pg_engine, row, code) for code in codes]
    sessions, session = [], pg_engine.session
    monkeypatch.setattr(pg_engine, "session", lambda reads=(): sessions.append(reads) or session(reads))
    assert passes_each(pg_engine, [(row, codes)]) == [alone] and alone == [False, True, False, True]
    assert len(sessions) == 1  # one copy for the four, introspected in it; alone: two sessions each


def test_candidates_sharing_a_copy_are_graded_alone_once_one_ends_the_session(pg_engine, built, monkeypatch):
    from plbench.evaluate import passes_each
    from plbench.procedures.rows import task_row
    from plbench.taskrow import as_record

    row = as_record(task_row(_task(built, "a1", REPORT), "PostgreSQL 16"))
    ending = _with_first_statements(row["reference_code"], "PERFORM pg_catalog.pg_terminate_backend(pg_backend_pid());")
    sessions, session = [], pg_engine.session
    monkeypatch.setattr(pg_engine, "session", lambda reads=(): sessions.append(reads) or session(reads))
    graded = [(row, [row["reference_code"], ending]), (row, [row["reference_code"]])]
    assert passes_each(pg_engine, graded) == [[True, False], [True]]
    assert len(sessions) == 1 + 3 * 2  # the shared one, then each of the three alone


# ---- B3 line edits ------------------------------------------------------------------------------------


def _b3_row(built):
    from plbench.procedures.rows import task_row

    return task_row(_task(built, "b3", REPORT), "PostgreSQL 16")


def _edits(buggy: str, fixed: str) -> str:
    import json

    pairs = zip(buggy.split("\n"), fixed.split("\n"), strict=True)
    return json.dumps({"edits": [{"line": n, "old": b, "new": f} for n, (b, f) in enumerate(pairs, start=1) if b != f]})


def test_b3_accepts_line_edits_of_the_buggy_procedure(pg_engine, built):
    import json

    from plbench.procedures.rows import grade_row

    row = _b3_row(built)
    buggy = json.loads(row.materials)["buggy_procedure.sql"]
    edits = _edits(buggy, row.reference_code)
    assert [e["line"] for e in json.loads(edits)["edits"]] == [6]  # the compile slip and the logic flip
    assert grade_row(pg_engine, row, edits).passed
    assert grade_row(pg_engine, row, row.reference_code).passed  # a whole procedure still counts
    compiles = _edits(buggy, buggy.replace("INSERT INOT", "INSERT INTO"))  # the logic flip left in
    flipped = grade_row(pg_engine, row, compiles)
    assert not flipped.passed and flipped.detail.startswith("state differs after call 1: table customer_report")


def test_b3_line_edits_delete_and_split_lines():
    from plbench.procedures.scenarios.b3 import submitted

    text = submitted(
        "t",
        {"buggy_procedure.sql": "a\nb\nc"},
        '{"edits": [{"line": 2, "old": "b", "new": null}, {"line": 3, "old": "c", "new": "c1\\nc2"}]}',
    )
    assert text == "a\nc1\nc2"


@pytest.mark.parametrize(
    "submission, reason",
    [
        ('{"edits": [{"line": 2, "old": "nope", "new": "x"}]}', "edit 1: line 2 is "),
        ('{"edits": [{"line": 999, "old": "", "new": "x"}]}', "edit 1 names no line of buggy_procedure.sql once"),
        ('{"edits": [{"line": 1, "old": "CREATE', 'line edits are not JSON of the form {"edits": [...]}'),
    ],
)
def test_b3_malformed_line_edits_fail_naming_the_task(pg_engine, built, submission, reason):
    from plbench.procedures.rows import grade_row

    row = _b3_row(built)
    graded = grade_row(pg_engine, row, submission)
    assert not graded.passed and graded.category == "invalid_artifact"
    assert graded.detail.startswith(f"{row.task_id}: ") and reason in graded.detail, graded.detail


# ---- the subset: release part, trivial gate, Oracle grammar, evaluate ---------------------------


@pytest.fixture(scope="module")
def part(pg_engine, built):
    return subset_part(pg_engine, "procfix", built)


def _rows_of(part, seed_id, dialect=None):
    return [r for r in part.rows if r.source_id.split("/", 1)[1] == seed_id and dialect in (None, r.dialect)]


def test_the_subset_part_reconciles_in_both_dialects(part, built):
    from plbench.config import NO_ORACLE
    from plbench.release import subset_counts

    counts = subset_counts("procedures", part.input_count, part.rows, part.rejections)
    assert counts["reconciles"] == {"oracle": True, "postgres": True}
    seeds = len(built.seeds.seeds)
    assert part.input_count == len(built.seeds.rejections) + len(ADAPTERS) * seeds
    assert counts["released"]["postgres"] == sum(t.dialect == "postgres" for t in built.tasks)
    assert counts["rejected_by_dialect"]["oracle"] == {"not_in_dialect": seeds}  # C2 is graded on PostgreSQL
    row = _rows_of(part, CHECKED, "oracle")[0]
    assert (row.source_id, row.replay_status, row.replay_detail) == (f"{row.scenario}/{CHECKED}", "not_run", NO_ORACLE)
    assert all(getattr(r, c) is not None for r in part.rows for c in ("materials", "call_suite", "statements"))
    scenarios = part.manifest["procedures"]["scenarios"]
    assert scenarios["a1/oracle"]["released"] == seeds and scenarios["a1/postgres"]["kill_rate"] == 1.0
    assert part.validation["oracle"]["replay"] == {"ran": False, "reason": NO_ORACLE}


def test_the_release_gate_runs_three_trivial_candidates_on_every_procedure_row(part, pg_engine):
    from plbench.grading.trivial import gate_parts

    one = dataclasses.replace(part, rows=_rows_of(part, REPORT))
    gated = gate_parts([one], SUBSETS, pg_engine)[0]
    group = gated.manifest["trivial_candidates"]["procedures"]["groups"]["procedures/postgres"]
    tasks = len(_rows_of(part, REPORT, "postgres"))
    assert group["tasks"] == tasks > 0 and gated.rows == one.rows
    assert group["candidates"] == {
        name: {"ran": tasks, "passed": []} for name in ("first_call_only", "noop", "state_change_removed")
    }
    # a "trivial" candidate that is the reference passes: the task is rejected in both dialects
    a1 = [r for r in one.rows if r.scenario == "a1"]
    reference = next(r for r in a1 if r.dialect == "postgres")
    rigged = dataclasses.replace(
        one, rows=a1, trivial_candidates={reference.key: [("reference", reference.reference_code)]}
    )
    out = gate_parts([rigged], SUBSETS, pg_engine)[0]
    refused = {(r.source_id, r.dialect, r.reason_code) for r in out.rejections if r.stage == "trivial_candidates"}
    assert out.rows == [] and refused == {
        (reference.source_id, d, "trivial_candidate_passes") for d in ("oracle", "postgres")
    }


def test_the_release_gate_grades_a_candidate_once_for_the_parts_sharing_its_grading_inputs(
    part, pg_engine, monkeypatch
):
    from plbench.grading import trivial

    one = dataclasses.replace(part, rows=[r for r in _rows_of(part, REPORT) if r.scenario == "a1"])
    turns = {r.key: dataclasses.replace(r, subset="multiturn", task_id=f"multiturn/{r.task_id}") for r in one.rows}
    made = {turns[key].key: code for key, code in one.trivial_candidates.items() if key in turns}
    twin = dataclasses.replace(one, subset="multiturn", rows=list(turns.values()), trivial_candidates=made)
    graded, passes_each = [], trivial.passes_each

    def counted(engine, tasks_codes, schema):
        graded.extend(task["subset"] for task, codes in tasks_codes for _ in codes)
        return passes_each(engine, tasks_codes, schema)

    monkeypatch.setattr(trivial, "passes_each", counted)
    gated = trivial.gate_parts([one, twin], SUBSETS, pg_engine)
    [postgres] = [r.key for r in one.rows if r.dialect == "postgres"]
    codes = {code for _, code in one.trivial_candidates[postgres]}  # noop and state_change_removed may be one code
    assert graded == ["procedures"] * len(codes)  # the twin part's row is graded by the verdicts of the first
    for out, name in zip(gated, ("procedures", "multiturn")):
        group = out.manifest["trivial_candidates"][name]["groups"][f"{name}/postgres"]
        assert group["tasks"] == 1 and all(c == {"ran": 1, "passed": []} for c in group["candidates"].values())
    assert [len(p.rows) for p in gated] == [2, 2]


def test_the_release_gate_keeps_settled_verdicts_and_grades_only_what_they_do_not_hold(
    part, pg_engine, tmp_path, monkeypatch
):
    from plbench.grading import trivial
    from plbench.grading.verdict_cache import VerdictCache

    one = dataclasses.replace(part, rows=_rows_of(part, REPORT))
    graded, passes_each, unsettle = [], trivial.passes_each, []

    def counted(engine, tasks_codes, schema):  # records (task id, code) graded; those in `unsettle` say None
        verdicts = passes_each(engine, tasks_codes, schema)
        pairs = [[(task["task_id"], code) for code in codes] for task, codes in tasks_codes]
        graded.extend(pair for each in pairs for pair in each)
        return [[None if p in unsettle else v for p, v in zip(ps, vs)] for ps, vs in zip(pairs, verdicts)]

    monkeypatch.setattr(trivial, "passes_each", counted)
    path = tmp_path / "verdicts.sqlite3"
    first = trivial.gate_parts([one], SUBSETS, pg_engine, cache=VerdictCache(path, pg_engine))[0]
    settled = len(graded)
    cache = VerdictCache(path, pg_engine)
    again = trivial.gate_parts([one], SUBSETS, pg_engine, cache=cache)[0]
    assert settled > 0 and len(graded) == settled  # nothing graded again
    assert cache.counts == {"kept": settled, "graded": 0, "unsettled": 0}
    assert (again.rows, again.manifest) == (first.rows, first.manifest)
    # a row that changed is graded again
    changed = [dataclasses.replace(r, prompt=r.prompt + " Again.") for r in one.rows]
    changed_part = dataclasses.replace(one, rows=changed)
    trivial.gate_parts([changed_part], SUBSETS, pg_engine, cache=VerdictCache(path, pg_engine))
    assert len(graded) == 2 * settled
    # another statement timeout is another scope: nothing is read from the one before
    with monkeypatch.context() as longer:
        longer.setattr(pg_engine, "statement_timeout_s", pg_engine.statement_timeout_s + 1)
        assert VerdictCache(path, pg_engine).kept == {}
    # an unsettled verdict (a call ran out of time) is not kept, so the next gate grades it again
    unsettle.append(graded[0])
    fresh = tmp_path / "fresh.sqlite3"
    trivial.gate_parts([one], SUBSETS, pg_engine, cache=VerdictCache(fresh, pg_engine))
    before = len(graded)
    cache = VerdictCache(fresh, pg_engine)
    trivial.gate_parts([one], SUBSETS, pg_engine, cache=cache)
    assert graded[before:] == unsettle and cache.counts == {"kept": settled - 1, "graded": 1, "unsettled": 1}


def test_a_procedure_call_that_runs_out_of_time_is_an_unsettled_timeout(part, pg_engine):
    from plbench.engines.postgres import PostgresEngine
    from plbench.evaluate import grade, passes, passes_each

    row = next(r for r in _rows_of(part, REPORT, "postgres") if r.scenario == "a1")
    task = as_record(row)
    slow = row.reference_code.replace("BEGIN\n", "BEGIN\n  PERFORM pg_sleep(5);\n", 1)
    assert slow != row.reference_code
    fast = PostgresEngine.start(pg_engine._dsn, Path("unused"), statement_timeout_s=0.5)
    try:
        verdicts = [r["verdict"] for r in grade(fast, task, slow)]
        assert verdicts[0] == "TIMEOUT" and set(verdicts[1:]) <= {"FAIL", "TIMEOUT"}
        assert passes(fast, task, slow) is None and passes(fast, task, row.reference_code) is True
        assert passes_each(fast, [(task, [slow, row.reference_code, row.scaffold])]) == [[None, True, False]]
    finally:
        fast.close()


def test_oracle_procedure_rows_are_parsed_statement_by_statement(part):
    from plbench.dialects.oracle_syntax import release_statements

    row = next(r for r in _rows_of(part, REPORT, "oracle") if r.scenario == "a1")
    kinds = {key.split("#")[1]: s.kind for key, s in release_statements([row], [], []).items()}
    calls = len(json.loads(row.test_cases))
    assert kinds == {"scaffold": "scaffold", "reference": "reference", "setup/0": "setup"} | {
        f"call/{n}": "call" for n in range(calls)
    }


def test_every_oracle_statement_of_the_procedure_rows_parses(part):
    import os

    from plbench.dialects.oracle_grammar import unavailable_reason
    from plbench.dialects.oracle_syntax import oracle_syntax_gate

    if reason := unavailable_reason():
        (pytest.fail if os.environ.get("PLBENCH_REQUIRE_ORACLE_GRAMMAR") else pytest.skip)(f"no parser: {reason}")
    rows = _rows_of(part, CHECKED, "oracle")
    gate = oracle_syntax_gate(rows)
    assert gate.section["failed"] == 0 and gate.rows == rows, gate.section["failures"][:3]
    assert set(gate.section["by_subset"]["procedures"]) == {"call", "reference", "scaffold", "setup"}
    broken = dataclasses.replace(rows[0], reference_code=rows[0].reference_code.replace("END IF;", "END;", 1))
    refused = oracle_syntax_gate([broken]).rejections
    assert [(r.source_id, r.reason_code) for r in refused] == [(broken.source_id, "oracle_syntax")]


def _evaluate(part, pg_engine, candidates):
    from plbench.evaluate import Release, run_candidates
    from plbench.taskrow import as_record

    release = Release("t", {r.key: as_record(r) for r in part.rows}, {})
    return [row for _, _, _, rows in run_candidates(release, candidates, {"postgres": pg_engine}) for row in rows]


def test_evaluate_scores_the_references_one_with_a_verdict_per_call(part, pg_engine):
    from plbench.evaluate import Candidate
    from plbench.grading.results import summarize

    rows = _rows_of(part, CHECKED, "postgres")
    cases = _evaluate(part, pg_engine, [Candidate(r.task_id, "postgres", r.reference_code) for r in rows])
    summary = summarize(cases)["procedures/postgres"]
    assert summary["tasks"] == len(rows) and summary["suite_pass@1"] == 1.0
    calls = len(json.loads(rows[0].call_suite)["calls"])
    assert len(cases) == len(rows) * calls and {c["verdict"] for c in cases} == {"PASS"}


def test_evaluate_names_the_table_a_candidate_should_not_touch_and_each_calls_verdict(part, pg_engine):
    from plbench.evaluate import Candidate

    row = next(r for r in _rows_of(part, REPORT, "postgres") if r.scenario == "a1")
    touches = row.reference_code.replace(
        "END;\n$plb$;", "  UPDATE orders SET status = 'seen' WHERE order_id = 10;\nEND;\n$plb$;"
    )
    third = row.reference_code.replace(
        "WHERE score > para_score;", "WHERE score > para_score OR (para_score = 70 AND score = 20);"
    )
    touched, wrong_third = (
        _evaluate(part, pg_engine, [Candidate(row.task_id, "postgres", c)]) for c in (touches, third)
    )
    assert [c["verdict"] for c in touched] == ["FAIL"] * 4
    assert touched[0]["detail"] == "state differs after call 1: table orders, 1 row changed"
    assert touched[0]["category"] == "wrong_logic_or_output"
    assert [c["verdict"] for c in wrong_third] == ["PASS", "PASS", "FAIL", "PASS"]
    assert wrong_third[2]["detail"] == "state differs after call 3: table customer_report, 1 row added"


def test_the_scenarios_of_one_seed_share_what_their_verdicts_depend_on(part):
    from plbench.grading.trivial import grading_inputs
    from plbench.taskrow import as_record

    inputs = {r.scenario: grading_inputs(as_record(r)) for r in _rows_of(part, CHECKED, "postgres")}
    assert inputs["a1"] == inputs["b1"] == inputs["c2"] and inputs["a5"] != inputs["a1"]  # A5 installs components
