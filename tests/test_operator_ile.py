"""ILE on MBPP end to end with the deterministic proposer: rounds proven by execution, every proposal in
the ledger, and the enhanced tasks through emission, replay with mutants on a real PostgreSQL server and
the round trip; a task no rule can change is rejected with the reasons of its proposals."""

import pytest

from plbench.mbpp.stages import StageOutput, build_tasks
from plbench.operators.framework import Ledger, Proposal
from plbench.operators.ile import SandboxExecutor, enhance, initial_state, realize
from plbench.operators.proposers import DeterministicProposer
from plbench.validation.replay import validate_task
from plbench.validation.roundtrip import roundtrip_task
from tests.helpers import typed_task

SOURCES = {
    "tri": ("def tri(n):\n    return n * (n + 1) // 2 if n > 0 else 0\n", ("n",), [((3,), 6), ((4,), 10), ((1,), 1)]),
    "sort_list": ("def sort_list(xs):\n    return sorted(xs)\n", ("xs",), [(([3, 1, 2],), [1, 2, 3]), (([],), [])]),
    "shout": ("def shout(s, n):\n    return s * n\n", ("s", "n"), [(("ab", 2), "abab"), (("x", 3), "xxx")]),
    "area": ("import math\ndef area(r):\n    return math.pi * r * r\n", ("r",), [((2,), 12.566370614359172)]),
}


def source(name: str, sid: str):
    code, params, cases = SOURCES[name]
    return typed_task(params, cases, entry=name, source_id=sid), code


@pytest.fixture(scope="module")
def enhanced():
    ledger = Ledger()
    results = [
        enhance(*source(name, str(i)), DeterministicProposer(), SandboxExecutor(), 2, ledger)
        for i, name in enumerate(SOURCES, start=1)
    ]
    return results, ledger


def test_every_task_gets_two_rounds_and_a_deterministic_rebuild(enhanced):
    results, ledger = enhanced
    assert [r.rounds for r in results] == [2, 2, 2, 2]
    assert all(r.proposer == "deterministic" and r.task.subset == "mbpp_ile" for r in results)
    again = Ledger()
    first = enhance(*source("tri", "1"), DeterministicProposer(), SandboxExecutor(), 2, again)
    assert first.code == results[0].code and first.task.cases == results[0].task.cases
    accepted = [e for e in ledger.entries if e.verdict == "accepted"]
    assert len(accepted) == 8 and {e.round for e in accepted} == {1, 2}
    summary = ledger.summary()["ile_mbpp"]
    assert summary["proposals"] == len(ledger.entries) and summary["accepted"] == 8
    assert summary["rejected"] == sum(summary["rejected_by_reason"].values())


def test_each_round_differs_from_the_previous_reference_and_no_task_is_constant(enhanced):
    for result in enhanced[0]:
        outputs = [c.expected for c in result.task.cases]
        assert len({repr(o) for o in outputs}) >= 2
        assert f"ILE rounds: {', '.join(result.rules)} (proposer deterministic)" in result.task.notes
        assert result.task.text.count("\n1. ") == 1 and "\n2. " in result.task.text


def test_enhanced_tasks_pass_replay_with_mutants_killed_and_round_trip(enhanced, pg_engine):
    tasks = build_tasks(StageOutput([r.task for r in enhanced[0]]))
    assert not tasks.rejections and len(tasks.items) == 8  # both dialects
    for art in (a for a in tasks.items if a.dialect == "postgres"):
        replay = validate_task(pg_engine, art.task)
        assert replay.status == "passed", (art.task_id, replay.detail)
        assert replay.mutants_killed == replay.mutants_total == 3
        trip = roundtrip_task(pg_engine, art.task)
        assert trip.equal == trip.values > 0


def test_a_rule_that_breaks_known_inputs_goes_back_for_repair():
    task, code = source("tri", "9")
    state = initial_state(task, code, SandboxExecutor())
    bad = Proposal(
        "x",
        "Fails on 3.",
        "def tri(n):\n    return 1 // (n - 3)\n",
        ("n",),
        tuple((c.origin, c.args) for c in state.cases),
    )
    rejected = realize(state, bad, SandboxExecutor())
    assert rejected.reason_code == "fails_known_inputs" and rejected.repairable
    renamed = Proposal("x", "Renamed.", "def tri(m, k):\n    return m\n", ("n",), bad.inputs)
    assert realize(state, renamed, SandboxExecutor()).reason_code == "signature_changed"


def test_a_task_no_rule_changes_is_rejected_with_its_reasons():
    task = typed_task(("n",), [((1,), False), ((2,), False)], entry="never", source_id="7")
    ledger = Ledger()
    result = enhance(task, "def never(n):\n    return False\n", DeterministicProposer(), SandboxExecutor(), 2, ledger)
    assert result.reason_code == "no_round_accepted" and result.subset == "mbpp_ile" and result.stage == "ile"
    assert [(e.rule_id, e.verdict, e.reason_code) for e in ledger.entries] == [
        ("none_argument", "rejected", "changes_nothing")  # None gives False before and after
    ]
    for reason in {e.reason_code for e in ledger.entries}:
        assert reason in result.detail


def test_a_reference_failing_its_own_inputs_is_rejected():
    task = typed_task(("n",), [((1,), 1)], entry="f", source_id="8")
    result = initial_state(task, "def f(n):\n    raise ValueError(n)\n", SandboxExecutor())
    assert result.reason_code == "reference_fails_own_inputs"


def test_the_build_s_choice_of_proposer_and_its_refusals():
    from plbench.config import NotConfigured
    from plbench.operators.framework import configured_proposer

    def rules():
        return "rules"

    def model(client):
        return ("model", client)

    def no_client():
        raise AssertionError("the rule templates need no model")

    assert configured_proposer("deterministic", no_client, rules, model) == "rules"
    assert configured_proposer("llm", lambda: "client", rules, model) == ("model", "client")
    with pytest.raises(ValueError, match="PLBENCH_ILE_PROPOSER='gpt': expected 'deterministic' or 'llm'"):
        configured_proposer("gpt", no_client, rules, model)
    with pytest.raises(ValueError, match="PLBENCH_ILE_PROPOSER=llm but no endpoint here"):
        configured_proposer("llm", lambda: NotConfigured("no endpoint here"), rules, model)
