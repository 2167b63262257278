"""Information omission on a task from procedural ILE: masking the last round's clause is proven by the
previous round's reference, executed on the call suite (the ledger entry names it), and rejected when that
reference reproduces every call, whatever implementation the proposer offered; and a catalogue fact's reading
on a final round whose rule added an INSERT ... VALUES (the audit row) edits only the query INSERT."""

from __future__ import annotations

import dataclasses

import pytest

from plbench.operators.facts import facts_of
from plbench.operators.framework import Ledger
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer, catalogue_perturbation
from plbench.operators.perturbations import INFORMATION_OMISSION, PerturbedState, perturb
from plbench.operators.procedural_ile import ProcedureRuleProposer, enhance, previous_reference
from plbench.procedures import tasks
from plbench.procedures.build import context
from plbench.procedures.strength import fails_suite

SEED = "procfix/train/5/status_update"
CLAUSE = (
    "If no row of `customer` qualifies (0 rows), the call raises an error (PostgreSQL: SQLSTATE 'PLB02'; Oracle: "
    "RAISE_APPLICATION_ERROR(-20002, ...)) and changes nothing."
)


@pytest.fixture(scope="module")
def enhanced(fixture, seeds, env):
    """SEED after two ILE rounds (threshold_parameter, then empty_input_error), and a context on its final round."""
    out = enhance(seeds[SEED], env, ProcedureRuleProposer(), 2, Ledger())
    return out, context(out.final, fixture.pg, fixture.oracle, env.workspace, frozenset({"postgres"}))


def _clause_mask(ctx, previous):
    fact = next(f for f in facts_of(ctx.seed, previous) if f.kind.kind == "ile_clause")
    return catalogue_perturbation(fact, "mask", "amber")


def _judge(ctx, previous, perturbation):
    state = PerturbedState("interactive/x", tuple(ctx.seed.requirement_lines), previous=previous)
    return INFORMATION_OMISSION.judge(state, perturbation, ctx)


def test_the_last_clause_is_a_fact_only_with_the_previous_round(enhanced):
    out, ctx = enhanced
    assert out.rules == ("threshold_parameter", "empty_input_error") and out.clauses[-1] == CLAUSE
    assert "ile_clause" not in [f.kind.kind for f in facts_of(ctx.seed)]
    mask = _clause_mask(ctx, out.history[-2].seed)
    assert (mask.rule_id, mask.stated, mask.replacement, mask.key, mask.answer) == (
        "mask:ile_clause",
        CLAUSE,
        "One more business rule applies, which this requirement does not state.",
        "which further business rule the procedure applies",
        CLAUSE,
    )
    # the implementation ignoring the clause is the previous round's reference, run with the final signature
    assert mask.alternative == out.history[-2].seed.procedure.render("postgres")


def test_the_previous_rounds_reference_proves_the_omission(enhanced):
    out, ctx = enhanced
    ledger = Ledger()
    result = perturb(ctx, DeterministicPerturbationProposer(), ledger, previous=out.history[-2].seed)
    masked = next(e for e in result.ledger if e.op == "mask")
    assert (masked.id, masked.key, masked.answer) == ("M1", "which further business rule the procedure applies", CLAUSE)
    assert masked.evidence == (
        "the previous ILE round's reference differs: call 5 (CALL sp_flag_customer(CAST(91 AS bigint), "
        "CAST(4 AS bigint))) differs"
    )
    assert "One more business rule applies, which this requirement does not state." in result.lines
    assert CLAUSE not in result.lines
    assert [e.rule_id for e in ledger.entries if e.operator == "information_omission"] == ["mask:ile_clause"]


def test_an_omission_the_previous_round_does_not_prove_is_rejected(enhanced):
    out, ctx = enhanced
    previous = out.history[-2].seed
    mask = _clause_mask(ctx, previous)
    assert _judge(ctx, previous, mask).entries[-1].id == "M1"
    # a "previous round" whose reference is the final one: it reproduces every call, so the mask is refused,
    # even with an alternative of the proposer's own that does diverge (the seed's reference)
    alike = dataclasses.replace(ctx.seed, requirement_lines=previous.requirement_lines)
    own = dataclasses.replace(mask, alternative=out.history[0].seed.procedure.render("postgres"))
    assert ctx.fails(own.alternative) != ""
    for perturbation in (mask, own):
        verdict = _judge(ctx, alike, perturbation)
        assert (verdict.reason_code, verdict.detail) == (
            "previous_round_reproduces",
            "the previous ILE round's reference reproduces every call",
        )


def test_the_unique_key_reading_of_a_final_round_limits_the_query_insert_not_the_audit_row(fixture, seeds, env):
    """raise_missing after ILE's audit_row round: two INSERTs, the result rows (a query) and the audit row (VALUES);
    the reading 'the key identifies one row' keeps one row of the query and leaves the audit row as it is."""
    out = enhance(seeds["procfix/train/6/raise_missing"], env, ProcedureRuleProposer(), 1, Ledger())
    assert out.rules == ("audit_row",)
    fact = next(f for f in facts_of(out.final.seed, out.history[-2].seed) if f.kind.kind == "unique_key")
    final = out.final.seed.procedure.render("postgres")
    rows = "INSERT INTO orders_report (status) SELECT status FROM orders WHERE customer_id = para_customer_id"
    audit = "INSERT INTO orders_audit (procedure_name, row_count) VALUES ('sp_checked_report_orders', v_rows_1);"
    assert f"{rows};" in final and audit in final
    assert fact.ignored.render("postgres") == final.replace(f"{rows};", f"{rows} LIMIT 1;")
    assert "INSERT INTO orders_audit (procedure_name, row_count) VALUES" in fact.ignored.render("oracle")


def test_the_omission_gate_is_answered_by_what_ile_ran(enhanced, fixture, env, monkeypatch):
    """ILE's distinguishing gate ran the previous round's reference on the final round's suite; the omission
    gate asks the same, and gets that answer (the one a run gives) without running it again."""
    out, _ = enhanced
    previous = previous_reference(out.history[-2].seed, out.final.seed)
    kept = out.final.strength.verdicts[previous]
    assert kept and kept == fails_suite(env.workspace, out.final.seed, out.final.suite, previous)
    ran = []
    monkeypatch.setattr(tasks, "fails_suite", lambda *args: ran.append(args[-1]) or fails_suite(*args))
    ctx = context(out.final, fixture.pg, fixture.oracle, env.workspace, frozenset({"postgres"}))
    result = perturb(ctx, DeterministicPerturbationProposer(), Ledger(), previous=out.history[-2].seed)
    masked = next(e for e in result.ledger if e.op == "mask")
    assert masked.evidence == f"the previous ILE round's reference differs: {kept}"
    assert ran and previous not in ran
