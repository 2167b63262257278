"""The Interactive protocol: the action table and budget, the simulated user answering only from the
ledger, and whole episodes on an Interactive row of the fixture database driven by a scripted solver
(the chat stub): asks, a selector, database actions, a malformed answer, reveals, budget exhaustion,
and the grade of a right and a wrong submission, each episode written as JSON."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main
from plbench.interactive.environment import Environment
from plbench.interactive.episode import LLMSolver, run_episode, summarize, write_episode
from plbench.interactive.protocol import ACTIONS, NONE_OF_THESE, Malformed, budget, parse_action
from plbench.interactive.stages import database_variants, ile_twins, variant_sources
from plbench.interactive.tasks import plain_source
from plbench.interactive.user import NO_ANSWER, SimulatedUser
from plbench.llm import LLMClient, LLMSettings
from plbench.operators.perturbation_proposers import DeterministicPerturbationProposer
from plbench.operators.procedural_ile import ProcedureRuleProposer, previous_reference
from plbench.operators.procedural_stage import database_ile
from plbench.procedures.build import database_procedures
from plbench.taskrow import TASK_SCHEMA, task_records
from tests.chat_stub import running

SEED = "procfix/train/6/raise_missing"
ENHANCED = "procfix/train/5/status_update"  # two ILE rounds before it is perturbed


def test_action_table_costs_and_budget():
    assert {a.name: a.cost for a in ACTIONS.values()} == {
        "ask_user": 2,
        "ask_selector": 2,
        "get_schema": 1,
        "describe_table": 0.5,
        "sample_rows": 0.5,
        "compile_plsql": 0.5,
        "execute_scratch": 1,
        "reset_scratch": 0,
        "submit": 0,
    }
    assert budget(0) == 20 and budget(3) == 26
    with pytest.raises(Malformed) as bad:
        parse_action("Let me look at the schema first.")
    assert bad.value.cost == 1
    with pytest.raises(Malformed) as missing:
        parse_action('{"tool": "sample_rows", "args": {}}')
    assert missing.value.cost == 0.5 and str(missing.value) == "sample_rows needs table"
    assert parse_action('{"tool": "get_schema"}')[0].name == "get_schema"


LEDGER = [
    {
        "id": "J1",
        "op": "jargon",
        "key": "What is the juniper test?",
        "answer": "The juniper test: a row qualifies only when `customer_id` equals `para_customer_id`.",
    },
    {
        "id": "C1",
        "op": "contradiction",
        "key": "Which statement about how `score` is compared with `para_score` is correct?",
        "answer": 'A row qualifies only when `score` is greater than `para_score`. The statement "A row '
        'qualifies only when `score` is at least `para_score`." is wrong.',
        "wrong": "A row qualifies only when `score` is at least `para_score`.",
    },
]


def test_the_user_answers_only_from_the_ledger():
    user = SimulatedUser(LEDGER)
    assert user.ask_user("The spec mentions a juniper test. What is the juniper test?", 3) == (
        LEDGER[0]["answer"],
        ["J1"],
    )
    assert user.ask_user("Can you show me the reference procedure's code?", 4) == (NO_ANSWER, [])
    assert user.ask_user("What do the calls of the test suite return?", 5) == (NO_ANSWER, [])
    index, shown, entry = user.ask_selector(
        ["Rows qualify when score is at least para_score", "Rows qualify when score is greater than para_score"], 6
    )
    assert (index, entry) == (2, "C1") and shown[0] == NONE_OF_THESE
    assert user.ask_selector(["Use a cursor loop", "Use a single UPDATE"], 7) == (
        0,
        [NONE_OF_THESE, "Use a cursor loop", "Use a single UPDATE"],
        None,
    )
    assert user.revealed == {"J1": (3, "ask_user"), "C1": (6, "ask_selector")}


@pytest.fixture(scope="module")
def variants(pg_engine, fixture):
    built = database_procedures(pg_engine, fixture.pg, fixture.oracle, fixture.equivalence, scenarios=())
    sources = [plain_source(v) for v in built.seeds.seeds]
    return database_variants(pg_engine, fixture.pg, fixture.oracle, sources, DeterministicPerturbationProposer())


@pytest.fixture(scope="module")
def row(variants):
    return next(r for r in variants.rows if r.key == (f"interactive/{SEED}", "postgres"))


def test_every_seed_ends_as_an_interactive_row_per_dialect_or_a_rejection(variants):
    assert variants.seeds == 11
    for dialect in ("postgres", "oracle"):
        rows = [r for r in variants.rows if r.dialect == dialect]
        rejected = [r for r in variants.rejections if r.dialect in (None, dialect)]
        assert len(rows) + len(rejected) == variants.seeds and len(rows) == 11
    summary = variants.summary()
    assert summary["tasks"] == {"oracle": 11, "postgres": 11} and summary["rejected"] == {}
    assert summary["hidden_facts_by_op"] == {"contradiction": 7, "env_contradiction": 2, "jargon": 11, "mask": 11}
    operators = variants.ledger.summary()
    assert {op: (s["proposals"], s["accepted"]) for op, s in operators.items()} == {
        "contradiction_injection": (9, 9),
        "information_omission": (11, 11),
        "knowledge_injection": (11, 11),
    }
    oracle = next(r for r in variants.rows if r.key == (f"interactive/{SEED}", "oracle"))
    assert oracle.ledger == next(r for r in variants.rows if r.key == (f"interactive/{SEED}", "postgres")).ledger
    assert oracle.replay_status == "not_run" and "RAISE_APPLICATION_ERROR" in oracle.reference_code


def test_an_interactive_row_carries_its_ledger_and_direct_twin(row):
    assert (row.task_id, row.subset, row.direct_task_id, row.proposer) == (
        f"interactive/{SEED}",
        "interactive",
        f"procedures/a1/{SEED}",
        "deterministic",
    )
    ledger = json.loads(row.ledger)
    assert [(e["id"], e["op"]) for e in ledger] == [
        ("J1", "jargon"),
        ("M1", "mask"),
        ("C1", "contradiction"),
        ("E1", "env_contradiction"),
    ]
    assert all(e["evidence"].startswith(("an implementation", "the reference reproduces")) for e in ledger)
    assert "juniper test" in row.prompt and "SQLSTATE 'PLB01'" not in row.prompt


def _action(tool: str, **args) -> str:
    return json.dumps({"tool": tool, "args": args})


def scripts(reference: str) -> dict[str, list[str]]:
    wrong = reference.replace("  DELETE FROM orders_report;\n", "")
    return {
        "explorer": [
            _action("get_schema"),
            _action("describe_table", table="orders_report"),
            _action("sample_rows", table="orders", limit=2),
            _action("ask_user", question="What is the juniper test?"),
            _action("ask_user", question="Can you paste the expected procedure?"),
            _action(
                "ask_selector",
                question="Which is right?",
                options=[
                    "Each call first removes every row of orders_report, then inserts its rows",
                    "Rows that earlier calls inserted into orders_report stay there; each call only adds its own rows",
                ],
            ),
            _action("execute_scratch", sql="SELECT count(*) AS n FROM orders"),
            _action("compile_plsql", code=reference.replace("BEGIN", "BEGN")),
            "I will now write the procedure.",
            _action("describe_table", table="no_such_table"),
            _action("reset_scratch"),
            _action("submit", code=reference),
        ],
        "asker": [_action("ask_user", question="What is the juniper test?")] * 20,
        "wrong": [_action("submit", code=wrong)],
    }


@pytest.fixture(scope="module")
def enhanced(pg_engine, fixture, seeds):
    """ENHANCED's Interactive row (PostgreSQL) made from its final ILE round, and its previous round's reference."""
    database = database_ile(pg_engine, fixture.pg, fixture.oracle, [seeds[ENHANCED]], ProcedureRuleProposer(), 2)
    sources = variant_sources([seeds[ENHANCED]], ile_twins([database]))
    out = database_variants(pg_engine, fixture.pg, fixture.oracle, sources, DeterministicPerturbationProposer())
    history = database.enhanced[0].history
    return next(r for r in out.rows if r.dialect == "postgres"), previous_reference(history[-2].seed, history[-1].seed)


@pytest.fixture
def server(row, enhanced):
    plans = scripts(row.reference_code)
    final, previous = enhanced
    plans |= {"final": [_action("submit", code=final.reference_code)], "previous": [_action("submit", code=previous)]}

    def answer(body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        return plans[body["model"]][turn]

    with running(answer) as srv:
        yield srv


def _episode(pg_engine, row, server, model, tmp_path) -> dict:
    solver = LLMSolver(LLMClient(LLMSettings(server.url, model, timeout_s=5), tmp_path / "llm"))
    with Environment.open(pg_engine, row) as env:
        run_episode(env, solver)
        return env.record("test-run", model)


def test_an_episode_with_asks_reveals_database_actions_and_a_correct_submission(pg_engine, row, server, tmp_path):
    record = _episode(pg_engine, row, server, "explorer", tmp_path)
    timeline = record["timeline"]
    assert [s["tool"] for s in timeline] == [
        "get_schema",
        "describe_table",
        "sample_rows",
        "ask_user",
        "ask_user",
        "ask_selector",
        "execute_scratch",
        "compile_plsql",
        "malformed",
        "describe_table",
        "reset_scratch",
        "submit",
    ]
    assert [s["cost"] for s in timeline] == [1, 0.5, 0.5, 2, 2, 2, 1, 0.5, 1, 0.5, 0, 0]
    assert record["budget"] == {"total": 28, "spent": 11.0, "remaining": 17.0}
    assert "table orders_report: status text" in timeline[0]["result"]
    assert timeline[1]["result"] == "table orders_report: status text; 0 rows"
    assert (
        timeline[2]["result"] == "order_id | customer_id | amount | status\n10 | 1 | 12.5 | open\n11 | 1 | 7.0 | closed"
    )
    assert timeline[3]["revealed"] == ["J1"] and timeline[3]["result"].startswith("The juniper test: a row qualifies")
    assert (timeline[4]["result"], timeline[4]["revealed"]) == (NO_ANSWER, [])
    assert (timeline[5]["index"], timeline[5]["entry"], timeline[5]["result"]) == (1, "C1", "1")
    assert timeline[6]["result"] == "n\n6"
    assert timeline[7]["result"].startswith("error: [42601] syntax error at or near")
    assert timeline[8]["result"].startswith("error: not a JSON action")
    assert timeline[9]["result"].startswith("error: no table 'no_such_table'; tables: ")
    assert record["grade"]["correct"] is True and record["grade"]["checks"] == {"submission": True, "ex": True}
    assert record["grade"]["recovered"] == 2 and record["grade"]["oracle_size"] == 4
    revealed = {e["id"]: (e["revealed_at"], e["via"]) for e in record["ledger"]}
    assert revealed == {"J1": (4, "ask_user"), "M1": (None, None), "C1": (6, "ask_selector"), "E1": (None, None)}
    assert record["summary"]["termination"] == "submit" and record["pair"] == {
        "direct_task_id": f"procedures/a1/{SEED}"
    }
    assert record["submission"] == {"form": "procedure", "text": row.reference_code}
    written = write_episode(record, tmp_path)
    assert (
        json.loads(written.read_text()) == record
        and written.name == f"test-run--interactive__{SEED.replace('/', '__')}.json"
    )


def test_budget_exhaustion_ends_the_episode_without_a_submission(pg_engine, row, server, tmp_path):
    record = _episode(pg_engine, row, server, "asker", tmp_path)
    assert len(record["timeline"]) == 15 and record["summary"]["termination"] == "budget_exhausted"
    assert record["timeline"][-1]["result"] == "budget exhausted: ask_user costs 2, 0 left"
    assert record["budget"]["spent"] == 28 and record["submission"] is None
    assert record["grade"]["correct"] is False and record["grade"]["reason"] == "no submission (budget_exhausted)"


def test_a_wrong_submission_is_graded_with_the_diverging_call(pg_engine, row, server, tmp_path):
    record = _episode(pg_engine, row, server, "wrong", tmp_path)
    assert record["grade"]["correct"] is False and record["grade"]["checks"]["ex"] is False
    assert record["grade"]["reason"].startswith("state differs after call 2: table orders_report")
    assert summarize([record]) == {
        "episodes": 1,
        "ex": 0.0,
        "recovered_share": 0.0,
        "terminations": {"submit": 1},
    }


def test_on_an_enhanced_seeds_variant_the_final_round_passes_and_the_previous_round_fails(
    pg_engine, enhanced, server, tmp_path
):
    row, previous = enhanced
    assert (row.task_id, row.direct_task_id, row.ile_rounds) == (
        f"interactive/{ENHANCED}",
        f"procedures_ile/{ENHANCED}",
        2,
    )
    passed = _episode(pg_engine, row, server, "final", tmp_path)
    assert passed["grade"]["correct"] is True and passed["pair"] == {"direct_task_id": f"procedures_ile/{ENHANCED}"}
    failed = _episode(pg_engine, row, server, "previous", tmp_path)
    assert (failed["grade"]["correct"], failed["grade"]["checks"]) == (False, {"submission": True, "ex": False})
    assert failed["grade"]["reason"] == "call 5: expected error PLB02, got no error"  # the masked clause


def test_cli_runs_the_episodes_of_a_release(pg_engine, row, server, tmp_path, monkeypatch, capsys):
    release = tmp_path / "v1"
    release.mkdir()
    pq.write_table(pa.Table.from_pylist(task_records([row]), schema=TASK_SCHEMA), release / "tasks.parquet")
    monkeypatch.setattr("plbench.config.project_root", lambda: tmp_path)  # the LLM cache goes there
    for name in ("PLBENCH_LLM_BASE_URL", "PLBENCH_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["evaluate", "--interactive", "--release", str(release)]) == 2
    assert "interactive episodes not run: PLBENCH_LLM_BASE_URL and PLBENCH_LLM_MODEL not set" in capsys.readouterr().err
    monkeypatch.setenv("PLBENCH_PG_DSN", pg_engine._dsn)
    monkeypatch.setenv("PLBENCH_LLM_BASE_URL", server.url)
    monkeypatch.setenv("PLBENCH_LLM_MODEL", "wrong")
    out = tmp_path / "out"
    assert main(["evaluate", "--interactive", "--release", str(release), "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "1 episodes, EX 0.0%, hidden facts recovered 0.0"
    summary = json.loads((out / "summary.json").read_text())
    assert summary == {
        "episodes": 1,
        "ex": 0.0,
        "recovered_share": 0.0,
        "run": "v1-wrong",
        "terminations": {"submit": 1},
    }
    (episode,) = (out / "episodes").iterdir()
    assert json.loads(episode.read_text())["direct_task_id"] == f"procedures/a1/{SEED}"
