"""Requirement perturbations on the fixture database: each catalogue row's exact texts and executed
alternatives, a whole perturbed requirement with its ledger, and each gate rejecting what it must."""

from __future__ import annotations

import dataclasses

import pytest
import sqlglot

from plbench.operators import perturbation_proposers
from plbench.operators.facts import facts_of, key_comparisons
from plbench.operators.framework import Ledger
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer, catalogue_perturbation
from plbench.operators.perturbations import (
    CONTRADICTION_INJECTION,
    INFORMATION_OMISSION,
    KNOWLEDGE_INJECTION,
    PerturbedState,
    perturb,
)
from plbench.procedures.describe import expression
from tests.procedure_fixtures import seed_contexts

REPORT = "procfix/train/1/result_table"
FLAG = "procfix/train/6/status_update"
CHECKED = "procfix/train/6/raise_missing"
SUMMARY = "procfix/train/2/summary_row"


@pytest.fixture(scope="module")
def ctx_of(pg_engine, tmp_path_factory):
    with seed_contexts(pg_engine, tmp_path_factory.mktemp("perturb")) as ctx_of:
        yield ctx_of


def _fact(ctx, fact_id):
    return next(f for f in facts_of(ctx.seed) if f.fact_id == fact_id)


def _texts(fact, op):
    p = catalogue_perturbation(fact, op, "amber")
    return p.stated, p.replacement, p.key, p.answer


# (seed, fact id, op) -> (stated, replacement, key, answer): every catalogue row, every op, exactly.
CATALOGUE = {
    (REPORT, "emptied_first", "jargon"): (
        "first removes every row of `customer_report`, then inserts",
        "first applies the amber sweep to `customer_report`, then inserts",
        "What is the amber sweep?",
        "The amber sweep: each call first removes every row of `customer_report`, then inserts its rows: "
        "`customer_report` holds only the latest call's rows.",
    ),
    (REPORT, "emptied_first", "mask"): (
        "first removes every row of `customer_report`, then inserts",
        "inserts",
        "whether the rows that earlier calls put into `customer_report` are kept",
        "Each call first removes every row of `customer_report`, then inserts its rows: `customer_report` holds "
        "only the latest call's rows.",
    ),
    (REPORT, "emptied_first", "contradiction"): (
        "",
        "Rows that earlier calls inserted into `customer_report` stay there; each call only adds its own rows.",
        "Which statement about whether the rows that earlier calls put into `customer_report` are kept is correct?",
        "Each call first removes every row of `customer_report`, then inserts its rows: `customer_report` holds "
        "only the latest call's rows. The statement \"Rows that earlier calls inserted into `customer_report` stay "
        'there; each call only adds its own rows." is wrong.',
    ),
    (REPORT, "comparison", "jargon"): (
        "`score` is greater than `para_score`",
        "`score` passes the amber test against `para_score`",
        "What is the amber test?",
        "The amber test: a row qualifies only when `score` is greater than `para_score`.",
    ),
    (REPORT, "comparison", "mask"): (
        "`score` is greater than `para_score`",
        "`score` is compared with `para_score` (the requirement does not say how)",
        "how `score` is compared with `para_score`",
        "A row qualifies only when `score` is greater than `para_score`.",
    ),
    (REPORT, "comparison", "contradiction"): (
        "",
        "A row qualifies only when `score` is at least `para_score`.",
        "Which statement about how `score` is compared with `para_score` is correct?",
        'A row qualifies only when `score` is greater than `para_score`. The statement "A row qualifies only when '
        '`score` is at least `para_score`." is wrong.',
    ),
    (FLAG, "selection_label", "jargon"): (
        "to 'selected'",
        "to the amber label",
        "What is the amber label?",
        "The amber label: the label written into review_status is 'selected'.",
    ),
    (FLAG, "selection_label", "mask"): (
        "to 'selected'",
        "to the selection label",
        "which label is written into review_status",
        "The label written into review_status is 'selected'.",
    ),
    (FLAG, "selection_label", "contradiction"): (
        "",
        "The label written into review_status is 'flagged'.",
        "Which statement about which label is written into review_status is correct?",
        "The label written into review_status is 'selected'. The statement \"The label written into review_status "
        "is 'flagged'.\" is wrong.",
    ),
    (FLAG, "counter_step", "jargon"): (
        "adds 1 to review_count",
        "applies the amber tally to review_count",
        "What is the amber tally?",
        "The amber tally: each call adds 1 to review_count on every row it selects.",
    ),
    (FLAG, "counter_step", "mask"): (
        "adds 1 to review_count",
        "updates review_count",
        "how review_count changes on a row a call selects",
        "Each call adds 1 to review_count on every row it selects.",
    ),
    (FLAG, "counter_step", "contradiction"): (
        "",
        "Each call adds 2 to review_count on every row it selects.",
        "Which statement about how review_count changes on a row a call selects is correct?",
        'Each call adds 1 to review_count on every row it selects. The statement "Each call adds 2 to review_count '
        'on every row it selects." is wrong.',
    ),
    (CHECKED, "error_code", "jargon"): (
        "(PostgreSQL: SQLSTATE 'PLB01'; Oracle: RAISE_APPLICATION_ERROR(-20001, ...))",
        "(with the amber code)",
        "What is the amber code?",
        "The amber code: a key that matches nothing raises SQLSTATE 'PLB01' in PostgreSQL and "
        "RAISE_APPLICATION_ERROR(-20001, <message>) in Oracle.",
    ),
    (CHECKED, "error_code", "mask"): (
        "(PostgreSQL: SQLSTATE 'PLB01'; Oracle: RAISE_APPLICATION_ERROR(-20001, ...))",
        "(with an error code the requirement does not give)",
        "which error code a key that matches nothing raises",
        "A key that matches nothing raises SQLSTATE 'PLB01' in PostgreSQL and RAISE_APPLICATION_ERROR(-20001, "
        "<message>) in Oracle.",
    ),
    (CHECKED, "error_code", "contradiction"): (
        "",
        "A key that matches nothing raises the generic error: SQLSTATE 'P0001' in PostgreSQL, "
        "RAISE_APPLICATION_ERROR(-20000, <message>) in Oracle.",
        "Which statement about which error code a key that matches nothing raises is correct?",
        "A key that matches nothing raises SQLSTATE 'PLB01' in PostgreSQL and RAISE_APPLICATION_ERROR(-20001, "
        '<message>) in Oracle. The statement "A key that matches nothing raises the generic error: SQLSTATE '
        "'P0001' in PostgreSQL, RAISE_APPLICATION_ERROR(-20000, <message>) in Oracle.\" is wrong.",
    ),
    (SUMMARY, "log_kept", "jargon"): (
        "Earlier rows are never changed or removed.",
        "`orders_summary` is kept as the amber ledger.",
        "What is the amber ledger?",
        "The amber ledger: `orders_summary` is a log: earlier rows are never changed or removed.",
    ),
    (SUMMARY, "log_kept", "mask"): (
        "Earlier rows are never changed or removed.",
        "",
        "what happens to the rows earlier calls appended to `orders_summary`",
        "`orders_summary` is a log: earlier rows are never changed or removed.",
    ),
    (SUMMARY, "log_kept", "contradiction"): (
        "",
        "Each call first removes the rows that earlier calls appended to `orders_summary`.",
        "Which statement about what happens to the rows earlier calls appended to `orders_summary` is correct?",
        '`orders_summary` is a log: earlier rows are never changed or removed. The statement "Each call first '
        'removes the rows that earlier calls appended to `orders_summary`." is wrong.',
    ),
    (CHECKED, "unique_key", "env_contradiction"): (
        "",
        "In `orders`, `customer_id` identifies a single row: no two rows share a value of `customer_id`.",
        "Which statement about whether a value of `customer_id` identifies a single row of `orders` is correct?",
        "Several rows of `orders` share a value of `customer_id`: a call keeps every row that qualifies. The "
        'statement "In `orders`, `customer_id` identifies a single row: no two rows share a value of `customer_id`." '
        "is wrong.",
    ),
}


@pytest.mark.parametrize(("seed_id", "fact_id", "op"), sorted(CATALOGUE))
def test_catalogue_row_texts(ctx_of, seed_id, fact_id, op):
    assert _texts(_fact(ctx_of(seed_id), fact_id), op) == CATALOGUE[(seed_id, fact_id, op)]


# (seed, fact id) -> (a line of the procedure that ignores the fact, a line of its conflicting reading)
ALTERNATIVES = {
    (REPORT, "emptied_first"): (
        "  INSERT INTO customer_report (name) SELECT name FROM customer WHERE score > para_score;",
    )
    * 2,
    (REPORT, "comparison"): (
        "  INSERT INTO customer_report (name) SELECT name FROM customer WHERE TRUE;",
        "  INSERT INTO customer_report (name) SELECT name FROM customer WHERE score >= para_score;",
    ),
    (FLAG, "selection_label"): (
        "  UPDATE orders SET review_status = 'flagged', review_count = review_count + 1 WHERE customer_id = "
        "para_customer_id;",
    )
    * 2,
    (FLAG, "counter_step"): (
        "  UPDATE orders SET review_status = 'selected' WHERE customer_id = para_customer_id;",
        "  UPDATE orders SET review_status = 'selected', review_count = review_count + 2 WHERE customer_id = "
        "para_customer_id;",
    ),
    (CHECKED, "error_code"): (
        "    RAISE EXCEPTION 'no row of orders has customer_id equal to the argument' USING ERRCODE = 'P0001';",
    )
    * 2,
    (SUMMARY, "log_kept"): ("  DELETE FROM orders_summary;",) * 2,
}


@pytest.mark.parametrize(("seed_id", "fact_id"), sorted(ALTERNATIVES))
def test_catalogue_alternatives_are_what_the_gates_execute_and_they_differ(ctx_of, seed_id, fact_id):
    ctx = ctx_of(seed_id)
    fact = _fact(ctx, fact_id)
    ignored, opposite = fact.ignored.render("postgres"), fact.opposite.render("postgres")
    assert (ALTERNATIVES[(seed_id, fact_id)][0] in ignored.splitlines()) and (
        ALTERNATIVES[(seed_id, fact_id)][1] in opposite.splitlines()
    )
    reference = ctx.seed.procedure.render("postgres")
    assert ctx.fails(reference) == "" and ctx.fails(ignored).startswith("call ") and ctx.fails(opposite)


def test_env_contradiction_reading_keeps_one_row_in_both_dialects_and_differs(ctx_of):
    ctx = ctx_of(CHECKED)
    fact = _fact(ctx, "unique_key")
    assert fact.kind.ops == ("env_contradiction",) and fact.ignored == fact.opposite
    postgres, oracle = fact.opposite.render("postgres"), fact.opposite.render("oracle")
    assert postgres == (
        "CREATE PROCEDURE sp_checked_report_orders(para_customer_id bigint)\n"
        "LANGUAGE plpgsql\n"
        "AS $plb$\n"
        "DECLARE\n"
        "  v_matches bigint;\n"
        "BEGIN\n"
        "  SELECT COUNT(*) INTO v_matches FROM orders WHERE customer_id = para_customer_id;\n"
        "  IF v_matches = 0 THEN\n"
        "    RAISE EXCEPTION 'no row of orders has customer_id equal to the argument' USING ERRCODE = 'PLB01';\n"
        "  ELSE\n"
        "    DELETE FROM orders_report;\n"
        "    INSERT INTO orders_report (status) SELECT status FROM orders WHERE customer_id = para_customer_id "
        "LIMIT 1;\n"
        "  END IF;\n"
        "END;\n"
        "$plb$;"
    )
    assert oracle == (
        "CREATE OR REPLACE PROCEDURE sp_checked_report_orders(para_customer_id IN ORDERS.CUSTOMER_ID%TYPE)\n"
        "IS\n"
        "  v_matches NUMBER;\n"
        "BEGIN\n"
        "  SELECT COUNT(*) INTO v_matches FROM ORDERS WHERE CUSTOMER_ID = para_customer_id;\n"
        "  IF v_matches = 0 THEN\n"
        "    RAISE_APPLICATION_ERROR(-20001, 'no row of orders has customer_id equal to the argument');\n"
        "  ELSE\n"
        "    DELETE FROM orders_report;\n"
        "    INSERT INTO orders_report (status) SELECT STATUS FROM ORDERS WHERE CUSTOMER_ID = para_customer_id "
        "FETCH FIRST 1 ROWS ONLY;\n"
        "  END IF;\n"
        "END sp_checked_report_orders;"
    )
    # the reading that trusts the claim differs on a key two rows of orders share: the database refutes it
    assert ctx.fails(postgres) == "call 1 (CALL sp_checked_report_orders(CAST(1 AS bigint))) differs"
    verdict = CONTRADICTION_INJECTION.judge(_state(ctx), catalogue_perturbation(fact, "env_contradiction", ""), ctx)
    assert (
        verdict.entries[-1].op == "env_contradiction"
        and verdict.lines[-1] == CATALOGUE[(CHECKED, "unique_key", "env_contradiction")][1]
    )


def test_env_contradiction_needs_a_key_of_one_table_that_selects_rows():
    """Only a one-table query whose WHERE has `column = parameter` as a conjunct, with more than one row
    possible, can show two rows sharing the key; the other fixture queries give no site."""
    cases = {
        "SELECT name FROM customer WHERE city = p AND score > 1": ["`city` equals `p`"],
        "SELECT name FROM customer WHERE city = p OR score > 1": [],
        "SELECT count(*) FROM customer WHERE city = p": [],
        "SELECT city, count(*) FROM customer WHERE city = p GROUP BY city": ["`city` equals `p`"],
        "SELECT name FROM customer WHERE city = p LIMIT 2": [],
        "SELECT a.name FROM customer AS a JOIN orders AS o ON a.id = o.customer_id WHERE a.id = p": [],
    }
    for sql, expected in cases.items():
        found = [expression(n) for n in key_comparisons(sqlglot.parse_one(sql, read="postgres"), {"p"})]
        assert found == expected, sql


def test_a_whole_perturbed_requirement_and_its_ledger(ctx_of):
    ledger = Ledger()
    result = perturb(ctx_of(CHECKED), DeterministicPerturbationProposer(), ledger)
    assert result.lines[3:5] == (
        "If no row of `orders` has `customer_id` equal to `para_customer_id` (NULL included), the call raises an "
        "error (with an error code the requirement does not give) and changes nothing.",
        "Otherwise: each call first removes every row of `orders_report`, then inserts one row per row of: "
        "`status` from table `orders`, keeping only the rows where `customer_id` passes the juniper test against "
        "`para_customer_id`.",
    )
    assert result.lines[-2:] == (
        "Rows that earlier calls inserted into `orders_report` stay there; each call only adds its own rows.",
        "In `orders`, `customer_id` identifies a single row: no two rows share a value of `customer_id`.",
    )
    assert [(e.id, e.op, e.key) for e in result.ledger] == [
        ("J1", "jargon", "What is the juniper test?"),
        ("M1", "mask", "which error code a key that matches nothing raises"),
        (
            "C1",
            "contradiction",
            "Which statement about whether the rows that earlier calls put into `orders_report` are kept is correct?",
        ),
        (
            "E1",
            "env_contradiction",
            "Which statement about whether a value of `customer_id` identifies a single row of `orders` is correct?",
        ),
    ]
    assert result.ledger[1].evidence == (
        "an implementation ignoring the fact differs: call 4 (CALL sp_checked_report_orders(CAST(6 AS bigint))) differs"
    )
    assert result.ledger[3].evidence == (
        "the reference reproduces the suite; the other reading differs: call 1 (CALL "
        "sp_checked_report_orders(CAST(1 AS bigint))) differs"
    )
    summary = ledger.summary()
    assert {op: s["accepted"] for op, s in summary.items()} == {
        "contradiction_injection": 2,
        "information_omission": 1,
        "knowledge_injection": 1,
    }


def test_the_seed_s_facts_are_found_once_for_every_operator(ctx_of, monkeypatch):
    """Each of the four operators asks the proposer about the same seed: the catalogue is searched once."""
    searched = []
    real = perturbation_proposers.facts_of
    monkeypatch.setattr(perturbation_proposers, "facts_of", lambda *args: searched.append(args) or real(*args))
    ledger = Ledger()
    result = perturb(ctx_of(CHECKED), DeterministicPerturbationProposer(), ledger)
    assert [e.op for e in result.ledger] == ["jargon", "mask", "contradiction", "env_contradiction"]
    assert len({e.round for e in ledger.entries}) == 4 and len(searched) == 1


def _state(ctx):
    return PerturbedState("interactive/x", tuple(ctx.seed.requirement_lines))


def _verdict(operator, ctx, perturbation):
    outcome = operator.judge(_state(ctx), perturbation, ctx)
    return getattr(outcome, "reason_code", "accepted")


def test_each_gate_rejects_what_it_must(ctx_of):
    ctx = ctx_of(REPORT)
    reference = ctx.seed.procedure.render("postgres")
    mask = catalogue_perturbation(_fact(ctx, "comparison"), "mask", "amber")
    contradiction = catalogue_perturbation(_fact(ctx, "comparison"), "contradiction", "amber")
    jargon = catalogue_perturbation(_fact(ctx, "emptied_first"), "jargon", "amber")
    assert _verdict(INFORMATION_OMISSION, ctx, mask) == "accepted"
    assert _verdict(CONTRADICTION_INJECTION, ctx, contradiction) == "accepted"
    assert _verdict(KNOWLEDGE_INJECTION, ctx, jargon) == "accepted"
    # an omission of a fact nothing depends on: the implementation "ignoring" it is the reference
    assert (
        _verdict(INFORMATION_OMISSION, ctx, dataclasses.replace(mask, alternative=reference)) == "fact_does_not_matter"
    )
    assert (
        _verdict(KNOWLEDGE_INJECTION, ctx, dataclasses.replace(jargon, alternative=reference)) == "fact_does_not_matter"
    )
    # a contradiction whose two readings behave alike
    alike = dataclasses.replace(contradiction, alternative=reference)
    assert _verdict(CONTRADICTION_INJECTION, ctx, alike) == "readings_behave_alike"
    # an env contradiction the database does not refute: its reading behaves as the reference does
    env = catalogue_perturbation(_fact(ctx_of(CHECKED), "unique_key"), "env_contradiction", "amber")
    assert _verdict(CONTRADICTION_INJECTION, ctx, dataclasses.replace(env, alternative=reference)) == (
        "readings_behave_alike"
    )
    broken = dataclasses.replace(mask, alternative=reference.replace("BEGIN", "BEGN"))
    assert _verdict(INFORMATION_OMISSION, ctx, broken) == "alternative_does_not_install"
    absent = dataclasses.replace(mask, stated="`score` is at most `para_score`")
    assert _verdict(INFORMATION_OMISSION, ctx, absent) == "fact_not_in_requirement"
    leaking = dataclasses.replace(mask, answer="Use DELETE FROM customer_report first.")
    assert _verdict(INFORMATION_OMISSION, ctx, leaking) == "ledger_leaks_code"
    still = dataclasses.replace(mask, replacement="`score` is greater than `para_score`, as usual")
    assert _verdict(INFORMATION_OMISSION, ctx, still) == "fact_still_stated"
    assert _verdict(INFORMATION_OMISSION, ctx, contradiction) == "wrong_op"
