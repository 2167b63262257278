"""The model side of procedural ILE against the OpenAI-compatible stub on 127.0.0.1 with recorded answers: a good
rule is accepted (and the judge's verdict counts when one is configured); a rule that changes nothing observable,
code that never compiles or never runs within the repair budget, an answer wrapped in prose, a 500 error and a
timeout are each recorded as a rejection with its reason; broken code repaired from the diagnostics is accepted; a
rebuild with the cache sends no request."""

from __future__ import annotations

import json

import pytest

from plbench.llm import LLMClient, LLMSettings
from plbench.operators.framework import REPAIR_BUDGET, Ledger
from plbench.operators.procedural_ile import ProcEnv, TextProcedure, enhance
from plbench.operators.procedural_llm import LLMJudge, ProcedureLLMProposer
from plbench.operators.procedural_rules import BY_ID, RuleContext, apply
from tests.chat_stub import running

SEED = "procfix/train/6/result_table"


@pytest.fixture(scope="module")
def validated(seeds):
    return seeds[SEED]


@pytest.fixture(scope="module")
def answers(validated, env):
    """Recorded answers: the empty-input rule as a model would write it, and bad variants of it."""
    change = apply(BY_ID["empty_input_error"], RuleContext(validated.seed, env.pg_db, env.oracle_db, env.workspace, 1))
    good = {"clause": change.clause, **{d: change.seed.procedure.render(d) for d in ("postgres", "oracle")}}
    broken = good | {"postgres": good["postgres"].replace("SELECT COUNT", "SELEC COUNT")}  # a misspelt keyword
    same = {
        "clause": "Keep the report current.",
        **{d: validated.seed.procedure.render(d) for d in ("postgres", "oracle")},
    }
    return {
        "good": json.dumps(good),
        "broken": json.dumps(broken),
        "crashes": json.dumps(good | {"postgres": good["postgres"].replace("COUNT(*) INTO", "COUNT(*) / 0 INTO")}),
        "same": json.dumps(same),
        "prose": "Here is the rule you asked for:\n```json\n" + json.dumps(good) + "\n```",
        "fail500": 500,
        "slow": None,
    }


def client(server, cache) -> LLMClient:
    return LLMClient(LLMSettings(server.url, "recorded-model", timeout_s=0.5), cache)


def run(validated, env, llm: LLMClient, judge=None) -> tuple[object, Ledger]:
    ledger = Ledger()
    out = enhance(
        validated,
        ProcEnv(env.workspace, env.shuffled, env.pg_db, env.oracle_db, judge),
        ProcedureLLMProposer(llm),
        1,
        ledger,
    )
    return out, ledger


def _is_judge(body: dict) -> bool:
    return body["messages"][0]["content"].startswith("You check")


def test_a_good_rule_is_accepted_and_a_rebuild_sends_no_request(validated, env, answers, tmp_path):
    with running(lambda body: answers["good"]) as server:
        out, ledger = run(validated, env, client(server, tmp_path))
        assert out.proposer == "llm:recorded-model" and out.rules == ("llm",)
        assert isinstance(out.final.seed.procedure, TextProcedure)
        assert out.final.seed.procedure.render("postgres") == json.loads(answers["good"])["postgres"]
        assert (out.final.seed.procedure.statements, out.final.seed.procedure.cyclomatic) == (5, 2)
        assert [(e.verdict, e.attempts) for e in ledger.entries] == [("accepted", 1)]
        assert len(server.requests) == 1
        rebuild = client(server, tmp_path)  # a new client on the same cache folder
        again, _ = run(validated, env, rebuild)
        assert len(server.requests) == 1 and rebuild.calls == 0 and rebuild.cache_hits == 1
        assert again.final.seed.procedure.texts == out.final.seed.procedure.texts


def test_broken_code_is_repaired_from_the_compiler_diagnostics(validated, env, answers, tmp_path):
    with running(lambda body: answers["good" if len(body["messages"]) > 2 else "broken"]) as server:
        out, ledger = run(validated, env, client(server, tmp_path))
        assert [(e.verdict, e.attempts) for e in ledger.entries] == [("accepted", 2)]
        feedback = server.requests[-1]["body"]["messages"][-1]["content"]
        assert feedback.startswith('The code failed: postgres: 42601: syntax error at or near "SELEC"')


@pytest.mark.parametrize(
    "name, reason, attempts, requests",
    [
        ("same", "changes_nothing", 1, 1),
        ("broken", "does_not_compile", REPAIR_BUDGET, REPAIR_BUDGET),
        ("crashes", "does_not_run", REPAIR_BUDGET, REPAIR_BUDGET),  # division by zero in every call
        ("prose", "answer_not_json", 1, 1),
        ("fail500", "endpoint_error", 1, 3),  # the client retries twice, then the round is rejected
        ("slow", "endpoint_error", 1, 3),
    ],
)
def test_bad_answers_are_rejected_with_their_reason(
    validated, env, answers, tmp_path, name, reason, attempts, requests
):
    with running(lambda body: answers[name]) as server:
        out, ledger = run(validated, env, client(server, tmp_path))
        assert out.reason_code == "no_round_accepted" and out.subset == "procedures_ile" and reason in out.detail
        assert [(e.verdict, e.reason_code, e.attempts, e.proposer) for e in ledger.entries] == [
            ("rejected", reason, attempts, "llm:recorded-model")
        ]
        assert len(server.requests) == requests
        assert ledger.summary()["ile_procedures"]["rejected_by_reason"] == {reason: 1}


@pytest.mark.parametrize("verdict, outcome", [("yes", "accepted"), ("no", "judge_misaligned")])
def test_the_judge_decides_alignment_when_a_model_is_configured(validated, env, answers, tmp_path, verdict, outcome):
    def answer(body):
        return json.dumps({"aligned": verdict, "reason": "recorded"}) if _is_judge(body) else answers["good"]

    with running(answer) as server:
        llm = client(server, tmp_path)
        out, ledger = run(validated, env, llm, LLMJudge(llm))
        assert [e.verdict if e.verdict == "accepted" else e.reason_code for e in ledger.entries] == [outcome]
        judged = [r for r in server.requests if _is_judge(r["body"])]
        assert len(judged) == 1 and "If no row of `orders` qualifies" in judged[0]["body"]["messages"][1]["content"]
