"""The LLM proposer of ILE against a small OpenAI-compatible server on 127.0.0.1 with recorded answers:
a good rule is accepted; a rule that changes nothing, code that never compiles within the repair budget,
an answer wrapped in prose, one whose JSON spells no Unicode text, a 500 error and a timeout are each
recorded as a rejection with its reason; a broken answer repaired from the diagnostics is accepted; a
rebuild with the cache sends no request."""

import json
import re

import pytest

from plbench.llm import LLMClient, LLMSettings
from plbench.operators.framework import REPAIR_BUDGET, Ledger
from plbench.operators.ile import SandboxExecutor, enhance
from plbench.operators.proposers import LLMProposer
from tests.chat_stub import running
from tests.helpers import typed_task

GOOD = {"clause": "Results above 4 are capped at 4.", "code": "def {f}(n):\n    return min(n * 2, 4)\n"}
SAME = {"clause": "Results above 1000 are capped at 1000.", "code": "def {f}(n):\n    return min(n * 2, 1000)\n"}
BROKEN = {"clause": "Results above 4 are capped at 4.", "code": "def {f}(n):\n    return min(n * 2, 4\n"}
# JSON spells the lone surrogate as an escape, which decodes to text no UTF-8 can carry.
SURROGATE = {"clause": "Results above 4 are capped at 4.", "code": "def {f}(n):\n    return '\ud800'\n"}


def _json(answer: dict, name: str) -> str:
    return json.dumps({k: v.replace("{f}", name) for k, v in answer.items()})


def answer_for(name: str, messages: list[dict]) -> str | int | None:
    """The recorded answer for the function `name`: text, an HTTP status, or None for a hang."""
    repairing = len(messages) > 2
    return {
        "good": _json(GOOD, name),
        "same": _json(SAME, name),
        "broken": _json(BROKEN, name),
        "repaired": _json(GOOD if repairing else BROKEN, name),
        "prose": "Sure! Here is the new rule:\n```json\n" + _json(GOOD, name) + "\n```",
        "surrogate": _json(SURROGATE, name),
        "fail500": 500,
        "slow": None,
    }[name]


def _recorded_answer(body: dict) -> str | int | None:
    name = re.search(r"define the function (\w+)\(", body["messages"][0]["content"]).group(1)
    return answer_for(name, body["messages"])


@pytest.fixture
def server():
    with running(_recorded_answer) as srv:
        yield srv


def client(server, cache) -> LLMClient:
    return LLMClient(LLMSettings(server.url, "recorded-model", timeout_s=0.5), cache)


def run(name: str, llm: LLMClient) -> tuple[object, Ledger]:
    task = typed_task(("n",), [((1,), 2), ((2,), 4), ((3,), 6)], entry=name, source_id=name)
    ledger = Ledger()
    result = enhance(task, f"def {name}(n):\n    return n * 2\n", LLMProposer(llm), SandboxExecutor(), 1, ledger)
    return result, ledger


def test_a_good_rule_is_accepted_and_a_rebuild_sends_no_request(server, tmp_path):
    result, ledger = run("good", client(server, tmp_path))
    assert result.proposer == "llm:recorded-model" and result.rules == ("llm",) and result.rounds == 1
    assert result.task.subset == "mbpp_ile" and result.task.text.endswith("1. Results above 4 are capped at 4.")
    assert [c.expected for c in result.task.cases[:3]] == [2, 4, 4]
    assert [(e.verdict, e.attempts) for e in ledger.entries] == [("accepted", 1)]
    repaired, ledger = run("repaired", client(server, tmp_path))
    assert [(e.verdict, e.attempts) for e in ledger.entries] == [("accepted", 2)]
    assert "SyntaxError" in server.requests[-1]["body"]["messages"][-1]["content"]  # the diagnostics were fed back
    sent = len(server.requests)
    assert sent == 3

    rebuild = client(server, tmp_path)  # a new client on the same cache folder
    again, _ = run("good", rebuild)
    again_repaired, _ = run("repaired", rebuild)
    assert len(server.requests) == sent and rebuild.calls == 0 and rebuild.cache_hits == 3
    assert again.code == result.code and again_repaired.code == repaired.code


@pytest.mark.parametrize(
    "name, reason, attempts, requests",
    [
        ("same", "changes_nothing", 1, 1),
        ("broken", "does_not_compile", REPAIR_BUDGET, REPAIR_BUDGET),
        ("prose", "answer_not_json", 1, 1),
        ("surrogate", "answer_not_unicode", 1, 1),
        ("fail500", "endpoint_error", 1, 3),  # the client retries twice, then the round is rejected
        ("slow", "endpoint_error", 1, 3),
    ],
)
def test_bad_answers_are_rejected_with_their_reason(server, tmp_path, name, reason, attempts, requests):
    result, ledger = run(name, client(server, tmp_path))
    assert result.reason_code == "no_round_accepted" and result.subset == "mbpp_ile"
    assert reason in result.detail
    assert [(e.verdict, e.reason_code, e.attempts, e.proposer) for e in ledger.entries] == [
        ("rejected", reason, attempts, "llm:recorded-model")
    ]
    assert len(server.requests) == requests
    assert ledger.summary()["ile_mbpp"]["rejected_by_reason"] == {reason: 1}
