"""The LLM proposer of perturbations against the OpenAI-compatible stub with recorded answers: good
answers become ledger entries; an omission of a fact nothing depends on, a contradiction whose two
readings behave alike, an answer wrapped in prose, a 500 error and a timeout are each recorded as a
rejection with its reason (never a crash); an alternative that does not install is repaired from the
diagnostics; a rebuild with the cache sends no request."""

from __future__ import annotations

import json

import pytest

from plbench.llm import LLMClient, LLMSettings
from plbench.operators.framework import Ledger, run_round
from plbench.operators.perturbation_proposers import LLMPerturbationProposer
from plbench.operators.perturbations import INFORMATION_OMISSION, PerturbedState, PerturbRequest, perturb
from tests.chat_stub import running
from tests.procedure_fixtures import seed_contexts

SEED = "procfix/train/1/result_table"
DELETE = "  DELETE FROM customer_report;\n"


@pytest.fixture(scope="module")
def ctx(pg_engine, tmp_path_factory):
    with seed_contexts(pg_engine, tmp_path_factory.mktemp("perturb_llm")) as ctx_of:
        yield ctx_of(SEED)


def good(op: str, reference: str) -> dict:
    return {
        "jargon": {
            "stated": "first removes every row of `customer_report`, then inserts",
            "replacement": "first performs the nightly reset of `customer_report`, then inserts",
            "key": "What is the nightly reset?",
            "answer": "Every row of customer_report is removed before the new rows go in.",
            "alternative": reference.replace(DELETE, ""),
        },
        "mask": {
            "stated": "`score` is greater than `para_score`",
            "replacement": "`score` is above the cut-off",
            "key": "what the cut-off for score is",
            "answer": "A row qualifies when its score is greater than para_score.",
            "alternative": reference.replace("score > para_score", "TRUE"),
        },
        "contradiction": {
            "stated": "",
            "replacement": "Rows qualify when `score` is at least `para_score`.",
            "key": "Is the comparison strict?",
            "answer": "Strict: score must be greater than para_score; 'at least' is wrong.",
            "alternative": reference.replace("score > para_score", "score >= para_score"),
        },
        "env_contradiction": {
            "stated": "",
            "replacement": "Table `customer` holds a single row.",
            "key": "How many rows does customer hold?",
            "answer": "Several: the statement that customer holds a single row is wrong.",
            "alternative": reference.replace("score > para_score;", "score > para_score LIMIT 1;"),
        },
    }[op]


def _op(system: str) -> str:
    return next(op for op, words in OP_WORDS.items() if words in system)


OP_WORDS = {
    "jargon": "Replace one explicit fact",
    "mask": "Mask one fact",
    "contradiction": "Add one statement",
    "env_contradiction": "State one thing about the database",
}


def recorded(reference: str):
    def answer(body: dict) -> str | int | None:
        model, messages = body["model"], body["messages"]
        op = _op(messages[0]["content"])
        ok = good(op, reference)
        if model == "good":
            return json.dumps(ok)
        if model == "nodepend":  # masks a phrase no behaviour depends on
            nothing = {
                "stated": "duplicates are kept",
                "replacement": "duplicates are as usual",
                "alternative": reference,
            }
            return json.dumps({**ok, **nothing})
        if model == "alike":  # the "conflicting" reading is the reference rewritten
            return json.dumps({**ok, "alternative": reference.replace("score > para_score", "para_score < score")})
        if model == "repaired":
            broken = {**ok, "alternative": ok["alternative"].replace("BEGIN", "BEGN")}
            return json.dumps(ok if len(messages) > 2 else broken)
        if model == "prose":
            return "Here is my perturbation:\n```json\n" + json.dumps(ok) + "\n```"
        return {"fail500": 500, "slow": None}[model]

    return answer


@pytest.fixture
def server(ctx):
    with running(recorded(ctx.seed.procedure.render("postgres"))) as srv:
        yield srv


def proposer(server, model: str, cache) -> LLMPerturbationProposer:
    return LLMPerturbationProposer(LLMClient(LLMSettings(server.url, model, timeout_s=0.5), cache))


def test_good_answers_become_ledger_entries_and_a_rebuild_sends_no_request(ctx, server, tmp_path):
    ledger = Ledger()
    result = perturb(ctx, proposer(server, "good", tmp_path), ledger)
    assert result.proposer == "llm:good"
    assert [(e.id, e.op, e.key) for e in result.ledger] == [
        ("J1", "jargon", "What is the nightly reset?"),
        ("M1", "mask", "what the cut-off for score is"),
        ("C1", "contradiction", "Is the comparison strict?"),
        ("E1", "env_contradiction", "How many rows does customer hold?"),
    ]
    assert result.lines[3] == (
        "Each call first performs the nightly reset of `customer_report`, then inserts one row per row of: `name` "
        "from table `customer`, keeping only the rows where `score` is above the cut-off."
    )
    assert result.lines[-2:] == (
        "Rows qualify when `score` is at least `para_score`.",
        "Table `customer` holds a single row.",
    )
    assert [e.verdict for e in ledger.entries] == ["accepted"] * 4 and len(server.requests) == 4

    again = proposer(server, "good", tmp_path)  # a rebuild on the same cache folder
    rebuilt = perturb(ctx, again, Ledger())
    assert rebuilt == result and len(server.requests) == 4 and again.client.calls == 0
    assert again.client.cache_hits == 4


def _reasons(ctx, server, model, tmp_path) -> dict[str, str]:
    ledger = Ledger()
    perturb(ctx, proposer(server, model, tmp_path), ledger)
    return {e.operator: e.reason_code or e.verdict for e in ledger.entries}


def test_an_omission_nothing_depends_on_and_alike_readings_are_rejected(ctx, server, tmp_path):
    nodepend = _reasons(ctx, server, "nodepend", tmp_path)
    assert nodepend["information_omission"] == "fact_does_not_matter"
    alike = _reasons(ctx, server, "alike", tmp_path)
    assert alike["contradiction_injection"] == "readings_behave_alike"


def test_an_alternative_that_does_not_install_is_repaired_from_the_diagnostics(ctx, server, tmp_path):
    ledger = Ledger()
    result = perturb(ctx, proposer(server, "repaired", tmp_path), ledger)
    assert [(e.verdict, e.attempts) for e in ledger.entries] == [("accepted", 2)] * 4 and len(result.ledger) == 4
    assert "alternative_does_not_install" not in [e.reason_code for e in ledger.entries]
    feedback = server.requests[1]["body"]["messages"][-1]["content"]
    assert feedback == (
        'Rejected: the alternative does not install: 42601: syntax error at or near "BEGN"\n'
        "Reply with the corrected JSON object only."
    )


@pytest.mark.parametrize(
    ("model", "reason", "requests"),
    [("prose", "answer_not_json", 1), ("fail500", "endpoint_error", 3), ("slow", "endpoint_error", 3)],
)
def test_prose_500_and_timeout_are_recorded_rejections(ctx, server, tmp_path, model, reason, requests):
    ledger = Ledger()
    state = PerturbedState("interactive/x", tuple(ctx.seed.requirement_lines))
    request = PerturbRequest(state, "mask", ctx)
    new = run_round(INFORMATION_OMISSION, state, request, proposer(server, model, tmp_path), ctx, ledger, ("x", 1), 4)
    assert new is None
    assert [(e.verdict, e.reason_code) for e in ledger.entries] == [("rejected", reason)]
    assert len(server.requests) == requests  # the client retried the 500 and the timeout twice
