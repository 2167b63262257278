"""The LLM path of the cross-check against a small OpenAI-compatible server the test runs on 127.0.0.1:
recorded answers, one call per distinct request, the disk cache on a rebuild, hint levels, not_run."""

import json
import re

import pytest

from pipelines.cli import main
from plbench.evaluate import read_tasks
from plbench.llm import DUMMY_KEY, LLMClient, LLMSettings, not_configured, request_key
from plbench.validation.crosscheck import HINT_LEVELS, crosscheck, generate_candidates, summarize
from tests.chat_stub import running
from tests.crosscheck_fixtures import SOLUTIONS, build_release

# Recorded answers: the fixture's correct solution of the function the prompt's scaffold names.
ANSWERS = {
    re.search(r"FUNCTION (\w+)\(", row["code"]).group(1): row["code"]
    for row in map(json.loads, SOLUTIONS.read_text().splitlines())
    if row["expect"] == "correct"
}
TASKS = ["mbpp/101", "mbpp/109", "mbpp/114"]


def _recorded_answer(body: dict) -> str:
    name = re.search(r"FUNCTION (\w+)\(", body["messages"][-1]["content"]).group(1)
    return f"Here is the function.\n\n```sql\n{ANSWERS[name]}\n```\n"


@pytest.fixture
def server():
    with running(_recorded_answer) as srv:
        yield srv


@pytest.fixture(scope="module")
def tasks(tmp_path_factory, pg_engine):
    return read_tasks(build_release(tmp_path_factory.mktemp("llm"), pg_engine))


def _settings(server) -> LLMSettings:
    env = {"PLBENCH_LLM_BASE_URL": server.url, "PLBENCH_LLM_MODEL": "recorded-model", "OPENAI_API_KEY": "test-key"}
    return LLMSettings.from_env(env)


def _rows(tasks):
    return [tasks[(t, "postgres")] for t in TASKS]


def test_generated_candidates_are_cross_checked_and_a_rebuild_makes_no_new_call(server, tasks, pg_engine, tmp_path):
    first = LLMClient(_settings(server), tmp_path / "llm")
    candidates = generate_candidates(_rows(tasks), first, "reference_tests")
    assert len(server.requests) == len(TASKS) == first.calls
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert {r["auth"] for r in server.requests} == {"Bearer test-key"}
    figures = summarize(crosscheck(tasks, candidates, {"postgres": pg_engine}))["mbpp/postgres"]
    assert figures["pass_fail_level"]["rate"] == 1.0 and figures["output_level"]["rate"] == 1.0

    again = LLMClient(_settings(server), tmp_path / "llm")  # a rebuild: new client, same cache folder
    assert generate_candidates(_rows(tasks), again, "reference_tests") == candidates
    assert len(server.requests) == len(TASKS) and again.calls == 0 and again.cache_hits == len(TASKS)
    cached = sorted((tmp_path / "llm").rglob("*"))
    assert len([p for p in cached if p.is_file()]) == len(TASKS)
    assert not [p for p in cached if p.name.endswith(".tmp")]  # written atomically, nothing left over
    record = json.loads(next(p for p in cached if p.is_file()).read_text())
    assert record["request"]["model"] == "recorded-model" and "```sql" in record["content"]


def test_an_answer_that_is_not_unicode_is_cached_and_read_back_with_replacement_characters(tmp_path):
    """A reply whose JSON spells a lone surrogate (`\\ud800`): before, caching it failed on a UnicodeEncodeError."""
    with running(lambda body: "SELECT 1; -- \ud800 \U0001f600") as srv:
        first = LLMClient(_settings(srv), tmp_path / "llm")
        assert first.complete([{"role": "user", "content": "hi"}]) == "SELECT 1; -- \ufffd \U0001f600"
        again = LLMClient(_settings(srv), tmp_path / "llm")
        assert again.complete([{"role": "user", "content": "hi"}]) == "SELECT 1; -- \ufffd \U0001f600"
        assert first.calls == 1 and again.cache_hits == 1 and len(srv.requests) == 1


def test_hint_levels_change_the_prompt(server, tasks, tmp_path):
    client = LLMClient(_settings(server), tmp_path / "llm")
    task = tasks[("mbpp/101", "postgres")]
    for hint in HINT_LEVELS:
        generate_candidates([task], client, hint)
    assert len(server.requests) == 3  # three distinct requests, none answered from the cache
    none, reference, tests = (r["body"]["messages"][-1]["content"] for r in server.requests)
    assert all(task["prompt"] in text for text in (none, reference, tests))
    assert "def sum_digits" not in none and "assert sum_digits" not in none
    assert "def sum_digits" in reference and "assert sum_digits" not in reference
    assert "def sum_digits" in tests and "assert sum_digits(345) == 12" in tests
    with pytest.raises(ValueError, match="unknown hint level"):
        generate_candidates([task], client, "everything")


def test_the_cache_key_is_the_canonical_request():
    request = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0}
    assert request_key(request) == request_key(dict(reversed(list(request.items()))))
    assert request_key(request) != request_key({**request, "temperature": 0.7})
    assert request_key(request) != request_key({**request, "model": "other"})


def test_not_run_without_an_endpoint_and_the_key_fallbacks():
    assert "PLBENCH_LLM_BASE_URL and PLBENCH_LLM_MODEL not set" in not_configured({})
    assert not_configured({"PLBENCH_LLM_BASE_URL": "http://x/v1"}).startswith("PLBENCH_LLM_MODEL not set")
    assert not_configured({"PLBENCH_LLM_BASE_URL": "http://x/v1", "PLBENCH_LLM_MODEL": "m"}) is None
    with pytest.raises(ValueError, match="not set"):
        LLMSettings.from_env({"PLBENCH_LLM_MODEL": "m"})
    env = {"PLBENCH_LLM_BASE_URL": "http://x/v1", "PLBENCH_LLM_MODEL": "m"}
    assert LLMSettings.from_env(env).api_key == DUMMY_KEY
    assert LLMSettings.from_env({**env, "OPENAI_API_KEY": "a"}).api_key == "a"
    assert LLMSettings.from_env({**env, "OPENAI_API_KEY": "a", "PLBENCH_LLM_API_KEY": "b"}).api_key == "b"


def test_the_cli_says_why_the_llm_path_did_not_run(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PLBENCH_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("PLBENCH_LLM_MODEL", raising=False)
    code = main(["crosscheck", "--release", str(tmp_path), "--llm", "--hint-level", "reference"])
    assert code == 2 and "crosscheck not run: PLBENCH_LLM_BASE_URL" in capsys.readouterr().err
