"""Procedural ILE on the fixture database (a real PostgreSQL): one test per rule template with its exact code in
both dialects and its exact clause; rounds accepted through every gate, with statements and cyclomatic complexity
per round; the gates' rejections (a rule that changes nothing, a clause that does not name what the code touches)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from plbench.dialects.oracle_grammar import check_statements
from plbench.operators.framework import Ledger
from plbench.operators.procedural_ile import ProcedureRuleProposer, enhance, touched
from plbench.operators.procedural_rules import BY_ID, TEMPLATES, Change, ProcedureRule, RuleContext, apply
from plbench.operators.procedural_stage import ProceduralIle, database_ile, ile_rows, multiturn_rows, summary
from plbench.procedures.grade import grade
from plbench.procedures.rows import grading_task
from plbench.procedures.workspace import DatabaseCopy

EXPECTED = {  # rule_id -> (seed, clause, PostgreSQL code, Oracle code)
    "skip_null_rows": (
        "procfix/train/1/result_table",
        ("Rows of `customer` whose `city` is NULL are skipped: the procedure leaves them out of what it reads."),
        (
            "CREATE PROCEDURE sp_report_customer(para_score bigint)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "BEGIN\n"
            "  DELETE FROM customer_report;\n"
            "  INSERT INTO customer_report (name) SELECT name FROM customer WHERE score > para_score "
            "AND NOT city IS NULL;\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_report_customer(para_score IN CUSTOMER.SCORE%TYPE)\n"
            "IS\n"
            "BEGIN\n"
            "  DELETE FROM customer_report;\n"
            "  INSERT INTO customer_report (name) SELECT NAME FROM CUSTOMER WHERE SCORE > para_score "
            "AND NOT CITY IS NULL;\n"
            "END sp_report_customer;"
        ),
    ),
    "empty_input_error": (
        "procfix/train/6/status_update",
        (
            "If no row of `orders` qualifies (0 rows), the call raises an error (PostgreSQL: "
            "SQLSTATE 'PLB02'; Oracle: RAISE_APPLICATION_ERROR(-20002, ...)) and changes nothing."
        ),
        (
            "CREATE PROCEDURE sp_flag_orders(para_customer_id bigint)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "DECLARE\n"
            "  v_rows_1 bigint;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM orders WHERE customer_id = para_customer_id;\n"
            "  IF v_rows_1 = 0 THEN\n"
            "    RAISE EXCEPTION 'no row qualifies' USING ERRCODE = 'PLB02';\n"
            "  ELSE\n"
            "    UPDATE orders SET review_status = 'selected', review_count = review_count + 1 WHERE "
            "customer_id = para_customer_id;\n"
            "  END IF;\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_flag_orders(para_customer_id IN ORDERS.CUSTOMER_ID%TYPE)\n"
            "IS\n"
            "  v_rows_1 NUMBER;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM ORDERS WHERE CUSTOMER_ID = para_customer_id;\n"
            "  IF v_rows_1 = 0 THEN\n"
            "    RAISE_APPLICATION_ERROR(-20002, 'no row qualifies');\n"
            "  ELSE\n"
            "    UPDATE ORDERS SET review_status = 'selected', review_count = review_count + 1 WHERE "
            "CUSTOMER_ID = para_customer_id;\n"
            "  END IF;\n"
            "END sp_flag_orders;"
        ),
    ),
    "threshold_parameter": (
        "procfix/train/6/result_table",
        (
            "The procedure takes one more parameter after the others, `para_max_rows` (an integer): "
            "when more than `para_max_rows` rows of `orders` qualify, the call raises an error "
            "(PostgreSQL: SQLSTATE 'PLB03'; Oracle: RAISE_APPLICATION_ERROR(-20003, ...)) and "
            "changes nothing."
        ),
        (
            "CREATE PROCEDURE sp_report_orders(para_customer_id bigint, para_max_rows bigint)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "DECLARE\n"
            "  v_rows_1 bigint;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM (SELECT status FROM orders WHERE customer_id = "
            "para_customer_id) AS plb_rows;\n"
            "  IF v_rows_1 > para_max_rows THEN\n"
            "    RAISE EXCEPTION 'more rows qualify than allowed' USING ERRCODE = 'PLB03';\n"
            "  ELSE\n"
            "    DELETE FROM orders_report;\n"
            "    INSERT INTO orders_report (status) SELECT status FROM orders WHERE customer_id = "
            "para_customer_id;\n"
            "  END IF;\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_report_orders(para_customer_id IN "
            "ORDERS.CUSTOMER_ID%TYPE, para_max_rows IN NUMBER)\n"
            "IS\n"
            "  v_rows_1 NUMBER;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM (SELECT STATUS FROM ORDERS WHERE CUSTOMER_ID = "
            "para_customer_id) plb_rows;\n"
            "  IF v_rows_1 > para_max_rows THEN\n"
            "    RAISE_APPLICATION_ERROR(-20003, 'more rows qualify than allowed');\n"
            "  ELSE\n"
            "    DELETE FROM orders_report;\n"
            "    INSERT INTO orders_report (status) SELECT STATUS FROM ORDERS WHERE CUSTOMER_ID = "
            "para_customer_id;\n"
            "  END IF;\n"
            "END sp_report_orders;"
        ),
    ),
    "cap_value": (
        "procfix/train/2/summary_row",
        ("In what it writes, `result_value` is capped at 2: a larger value is written as 2."),
        (
            "CREATE PROCEDURE sp_summarize_orders(para_status text)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "BEGIN\n"
            "  INSERT INTO orders_summary (arg_status, result_value) VALUES (para_status, CASE WHEN "
            "(SELECT COUNT(*) FROM orders WHERE status = para_status) > 2 THEN 2 ELSE (SELECT "
            "COUNT(*) FROM orders WHERE status = para_status) END);\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_summarize_orders(para_status IN ORDERS.STATUS%TYPE)\n"
            "IS\n"
            "BEGIN\n"
            "  INSERT INTO orders_summary (arg_status, result_value) VALUES (para_status, CASE WHEN "
            "(SELECT COUNT(*) FROM ORDERS WHERE STATUS = para_status) > 2 THEN 2 ELSE (SELECT "
            "COUNT(*) FROM ORDERS WHERE STATUS = para_status) END);\n"
            "END sp_summarize_orders;"
        ),
    ),
    "round_down_value": (
        "procfix/train/3/result_table",
        ("In what it writes, `amount` is rounded down to a whole number (FLOOR)."),
        (
            "CREATE PROCEDURE sp_report_customer(para_city text, para_amount double precision)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "BEGIN\n"
            "  DELETE FROM customer_report;\n"
            "  INSERT INTO customer_report (name, amount) SELECT T1.name, FLOOR(T2.amount) FROM "
            "customer AS T1 JOIN orders AS T2 ON T1.id = T2.customer_id WHERE T1.city = para_city "
            "AND T2.amount >= para_amount;\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_report_customer(para_city IN CUSTOMER.CITY%TYPE, "
            "para_amount IN ORDERS.AMOUNT%TYPE)\n"
            "IS\n"
            "BEGIN\n"
            "  DELETE FROM customer_report;\n"
            "  INSERT INTO customer_report (name, amount) SELECT T1.NAME, FLOOR(T2.AMOUNT) FROM "
            "CUSTOMER T1 JOIN ORDERS T2 ON T1.ID = T2.CUSTOMER_ID WHERE T1.CITY = para_city AND "
            "T2.AMOUNT >= para_amount;\n"
            "END sp_report_customer;"
        ),
    ),
    "audit_row": (
        "procfix/train/6/result_table",
        (
            "When at least 2 row(s) of `orders` qualify, the call also appends one row to "
            "`orders_audit` (procedure_name, row_count) holding 'sp_report_orders' and that number "
            "of rows, counted before it writes; `orders_audit` exists and is empty before the first "
            "call."
        ),
        (
            "CREATE PROCEDURE sp_report_orders(para_customer_id bigint)\n"
            "LANGUAGE plpgsql\n"
            "AS $plb$\n"
            "DECLARE\n"
            "  v_rows_1 bigint;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM (SELECT status FROM orders WHERE customer_id = "
            "para_customer_id) AS plb_rows;\n"
            "  DELETE FROM orders_report;\n"
            "  INSERT INTO orders_report (status) SELECT status FROM orders WHERE customer_id = "
            "para_customer_id;\n"
            "  IF v_rows_1 >= 2 THEN\n"
            "    INSERT INTO orders_audit (procedure_name, row_count) VALUES ('sp_report_orders', "
            "v_rows_1);\n"
            "  ELSE\n"
            "    NULL;\n"
            "  END IF;\n"
            "END;\n"
            "$plb$;"
        ),
        (
            "CREATE OR REPLACE PROCEDURE sp_report_orders(para_customer_id IN "
            "ORDERS.CUSTOMER_ID%TYPE)\n"
            "IS\n"
            "  v_rows_1 NUMBER;\n"
            "BEGIN\n"
            "  SELECT COUNT(*) INTO v_rows_1 FROM (SELECT STATUS FROM ORDERS WHERE CUSTOMER_ID = "
            "para_customer_id) plb_rows;\n"
            "  DELETE FROM orders_report;\n"
            "  INSERT INTO orders_report (status) SELECT STATUS FROM ORDERS WHERE CUSTOMER_ID = "
            "para_customer_id;\n"
            "  IF v_rows_1 >= 2 THEN\n"
            "    INSERT INTO orders_audit (procedure_name, row_count) VALUES ('sp_report_orders', "
            "v_rows_1);\n"
            "  ELSE\n"
            "    NULL;\n"
            "  END IF;\n"
            "END sp_report_orders;"
        ),
    ),
}


def test_every_template_has_its_test():
    assert set(EXPECTED) == {t.rule_id for t in TEMPLATES}


@pytest.mark.parametrize("rule_id", sorted(EXPECTED))
def test_template_code_and_clause_in_both_dialects(rule_id, seeds, env):
    seed_id, clause, postgres, oracle = EXPECTED[rule_id]
    seed = seeds[seed_id].seed
    change = apply(BY_ID[rule_id], RuleContext(seed, env.pg_db, env.oracle_db, env.workspace, 1))
    assert change.clause == clause
    assert change.seed.requirement_lines == seed.requirement_lines + (clause,)
    assert change.seed.procedure.render("postgres") == postgres
    assert change.seed.procedure.render("oracle") == oracle
    # the deterministic alignment check: the clause names everything the change adds to the code
    assert all(t.lower() in clause.lower() for t in touched(seed, change.seed, env.pg_db))


def test_audit_row_creates_its_table_in_both_dialects(seeds, env):
    seed = seeds["procfix/train/6/result_table"].seed
    change = apply(BY_ID["audit_row"], RuleContext(seed, env.pg_db, env.oracle_db, env.workspace, 1))
    assert change.seed.writes == ("orders_report", "orders_audit")
    assert change.seed.setup["postgres"][-1] == "CREATE TABLE orders_audit (procedure_name text, row_count bigint)"
    assert (
        change.seed.setup["oracle"][-1] == "CREATE TABLE orders_audit (procedure_name VARCHAR2(4000), row_count NUMBER)"
    )
    assert touched(seed, change.seed, env.pg_db) == [
        "2",
        "orders_audit",
        "procedure_name",
        "row_count",
        "sp_report_orders",
    ]


def test_templates_that_do_not_apply_say_so(seeds, env):
    flag = seeds["procfix/train/6/status_update"].seed  # an UPDATE writes no value to cap or round
    ctx = RuleContext(flag, env.pg_db, env.oracle_db, env.workspace, 1)
    assert apply(BY_ID["cap_value"], ctx) is None and apply(BY_ID["round_down_value"], ctx) is None
    report = seeds["procfix/train/2/result_table"].seed  # orders.status is the column tested already
    assert apply(BY_ID["skip_null_rows"], RuleContext(report, env.pg_db, env.oracle_db, env.workspace, 1)) is None


def test_rounds_are_accepted_through_every_gate(seeds, env):
    ledger = Ledger()
    out = enhance(seeds["procfix/train/5/status_update"], env, ProcedureRuleProposer(), 3, ledger)
    assert out.rules == ("threshold_parameter", "empty_input_error", "audit_row")
    assert out.proposer == "deterministic" and out.rounds == 3
    assert [(v.seed.procedure.statements, v.seed.procedure.cyclomatic) for v in out.history] == [
        (1, 1),
        (4, 2),
        (7, 3),
        (10, 4),
    ]
    assert [(e.round, e.rule_id, e.verdict) for e in ledger.entries] == [
        (1, "threshold_parameter", "accepted"),
        (2, "empty_input_error", "accepted"),
        (3, "audit_row", "accepted"),
    ]
    final = out.final
    assert [p.name for p in final.seed.procedure.params] == ["para_score", "para_max_rows"]
    assert final.seed.requirement_lines[-3:] == out.clauses
    assert final.strength.trivial_passed == [] and final.strength.killed == final.strength.total
    assert ledger.summary()["ile_procedures"]["acceptance_rate"] == 1.0


def _fixed(rule_id: str, make) -> ProcedureRule:
    return ProcedureRule(rule_id, "", lambda ctx, clause: make(ctx))


def test_a_rule_that_changes_nothing_and_a_misaligned_clause_are_rejected(seeds, env):
    validated = seeds["procfix/train/6/result_table"]

    def same(ctx):  # the requirement grows, the code does not
        return Change(replace(ctx.seed, requirement_lines=ctx.seed.requirement_lines + ("Be careful.",)), "Be careful.")

    def unnamed(ctx):  # the audit rule with a clause that names none of its table, columns or values
        change = apply(BY_ID["audit_row"], ctx)
        return Change(
            replace(change.seed, requirement_lines=ctx.seed.requirement_lines + ("Keep a log.",)), "Keep a log."
        )

    ledger = Ledger()
    proposer = ProcedureRuleProposer((_fixed("same", same), _fixed("unnamed", unnamed)))
    out = enhance(validated, env, proposer, 1, ledger)
    assert out.reason_code == "no_round_accepted" and out.subset == "procedures_ile"
    verdicts = sorted((e.rule_id, e.verdict, e.reason_code) for e in ledger.entries)
    assert verdicts == [("same", "rejected", "changes_nothing"), ("unnamed", "rejected", "clause_misaligned")]
    misaligned = next(e for e in ledger.entries if e.rule_id == "unnamed")
    assert "['2', 'orders_audit', 'procedure_name', 'row_count', 'sp_report_orders']" in misaligned.detail


@pytest.fixture(scope="module")
def database(pg_engine, fixture, seeds):
    chosen = [seeds["procfix/train/5/status_update"], seeds["procfix/train/6/raise_missing"]]
    return database_ile(pg_engine, fixture.pg, fixture.oracle, chosen, ProcedureRuleProposer(), 3)


def test_ile_rows_are_procedures_rows_with_their_rounds(database):
    rows = ile_rows([database], "PostgreSQL 16")
    assert [(r.task_id, r.dialect, r.subset, r.proposer, r.ile_rounds, r.statements, r.cyclomatic) for r in rows] == [
        ("procedures_ile/procfix/train/5/status_update", "oracle", "procedures_ile", "deterministic", 3, 10, 4),
        ("procedures_ile/procfix/train/5/status_update", "postgres", "procedures_ile", "deterministic", 3, 10, 4),
        ("procedures_ile/procfix/train/6/raise_missing", "oracle", "procedures_ile", "deterministic", 1, 8, 3),
        ("procedures_ile/procfix/train/6/raise_missing", "postgres", "procedures_ile", "deterministic", 1, 8, 3),
    ]
    first = rows[1]
    assert first.replay_status == "passed" and rows[0].replay_status == "not_run"
    assert first.notes[-4:] == (
        "round 0 (seed): 1 statements, cyclomatic 1",
        "round 1 (threshold_parameter): 4 statements, cyclomatic 2",
        "round 2 (empty_input_error): 7 statements, cyclomatic 3",
        "round 3 (audit_row): 10 statements, cyclomatic 4",
    )
    assert all(c in first.prompt for c in database.enhanced[0].clauses)
    assert json.loads(first.signature) == [
        {"name": "para_score", "type": "bigint"},
        {"name": "para_max_rows", "type": "bigint"},
    ]
    assert database.seeds == len(database.enhanced) + len(database.rejections) == 2


def test_multiturn_rows_one_per_turn_and_each_turn_graded_on_its_own_suite(pg_engine, fixture, database):
    rows = [r for r in multiturn_rows([database], "PostgreSQL 16") if r.dialect == "postgres"]
    assert [(r.task_id, r.conversation_id, r.turn_index, r.turn_count) for r in rows] == [
        (f"multiturn/procfix/train/5/status_update/turn{k}", "multiturn/procfix/train/5/status_update", k, 4)
        for k in range(1, 5)
    ]
    assert rows[1].prompt.startswith("Update the procedure you wrote in turn 1 so that it also does the following")
    assert database.enhanced[0].clauses[0] in rows[1].prompt and database.enhanced[0].clauses[1] not in rows[1].prompt
    assert [(r.source_id, r.reason_code) for r in database.multiturn_rejections] == [
        ("procfix/train/6/raise_missing/turn1", "too_few_turns"),
        ("procfix/train/6/raise_missing/turn2", "too_few_turns"),
    ]  # one round: two turns
    db = DatabaseCopy.of(fixture.pg)
    for previous, turn in zip(rows, rows[1:]):
        assert grade(pg_engine, grading_task(turn, db), turn.reference_code).passed
        failed = grade(pg_engine, grading_task(turn, db), previous.reference_code)
        assert not failed.passed and failed.detail  # the previous turn's procedure does not do the update


def test_the_manifest_section_reports_rounds_and_complexity_per_round(database):
    section = summary(ProceduralIle([database], ("postgres",), "PostgreSQL 16", rounds=3))
    assert section == {  # no seconds: a manifest is the same for the same inputs
        "databases": {"taking_part": 1, "left_out": 0},
        "seeds": 2,
        "enhanced": 2,
        "max_rounds": 3,
        "rounds": {1: 1, 3: 1},
        "episodes": 1,
        "per_round": {
            "0": {"references": 2, "statements_mean": 3.0, "cyclomatic_mean": 1.5},
            "1": {"references": 2, "statements_mean": 6.0, "cyclomatic_mean": 2.5},
            "2": {"references": 1, "statements_mean": 7.0, "cyclomatic_mean": 3.0},
            "3": {"references": 1, "statements_mean": 10.0, "cyclomatic_mean": 4.0},
        },
    }
    assert ProceduralIle([database]).ledger.summary()["ile_procedures"]["accepted"] == 4


def test_every_template_oracle_text_parses_with_the_oracle_grammar(seeds, env):
    texts = {}
    for rule_id, (seed_id, *_rest) in EXPECTED.items():
        ctx = RuleContext(seeds[seed_id].seed, env.pg_db, env.oracle_db, env.workspace, 1)
        texts[rule_id] = apply(BY_ID[rule_id], ctx).seed.procedure.render("oracle")
    result = check_statements(texts)
    if not result.ran:
        pytest.skip(result.reason)
    assert result.problems == {rule_id: () for rule_id in EXPECTED}
