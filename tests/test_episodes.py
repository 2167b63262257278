"""Episode Pass@1 and Turn Suite Pass@1 in the evaluation summary of a multi-turn subset, from case rows."""

from plbench.grading.episodes import episodes_of
from plbench.grading.results import markdown, summarize, summary_line

TASKS = {
    (f"multiturn/{c}/turn{k}", "postgres"): {
        "task_id": f"multiturn/{c}/turn{k}",
        "conversation_id": f"multiturn/{c}",
        "turn_count": 3,
    }
    for c in ("a", "b")
    for k in (1, 2, 3)
} | {("mbpp/1", "postgres"): {"task_id": "mbpp/1", "conversation_id": None, "turn_count": None}}


def _rows(task_id: str, candidate: int, verdicts: list[str], subset: str = "multiturn") -> list[dict]:
    return [
        {
            "candidate": candidate,
            "task_id": task_id,
            "subset": subset,
            "dialect": "postgres",
            "case": n,
            "verdict": v,
            "category": None if v == "PASS" else "wrong_logic",
            "detail": "",
        }
        for n, v in enumerate(verdicts, start=1)
    ]


def test_an_episode_passes_only_when_every_turn_passes():
    rows = (
        _rows("multiturn/a/turn1", 0, ["PASS", "PASS"])
        + _rows("multiturn/a/turn2", 1, ["PASS", "PASS", "PASS"])
        + _rows("multiturn/a/turn3", 2, ["PASS"])
        + _rows("multiturn/b/turn1", 3, ["PASS"])
        + _rows("multiturn/b/turn2", 4, ["PASS", "FAIL"])  # conversation b fails at turn 2
        + _rows("multiturn/b/turn3", 5, ["PASS"])
        + _rows("mbpp/1", 6, ["PASS"], "mbpp")
    )
    summary = summarize(rows, episodes_of(TASKS))
    turns = summary["multiturn/postgres"]
    assert (turns["episodes"], turns["episode_pass@1"], turns["turn_suite_pass@1"]) == (2, 0.5, 0.8333)
    assert "episodes" not in summary["mbpp/postgres"]
    assert summary_line("multiturn/postgres", turns).endswith(
        "Episode Pass@1 0.5 over 2 conversations, Turn Suite Pass@1 0.8333"
    )
    assert "- multiturn/postgres: Episode Pass@1 0.5 over 2 conversations" in markdown(summary, "r", "s")


def test_a_conversation_with_a_turn_not_submitted_fails_and_shares_multiply():
    rows = (
        _rows("multiturn/a/turn1", 0, ["PASS"])
        + _rows("multiturn/a/turn2", 1, ["PASS"])  # no candidate for turn 3
        + _rows("multiturn/b/turn1", 2, ["PASS"])
        + _rows("multiturn/b/turn1", 3, ["FAIL"])  # two candidates: the turn passes half the time
        + _rows("multiturn/b/turn2", 4, ["PASS"])
        + _rows("multiturn/b/turn3", 5, ["PASS"])
    )
    turns = summarize(rows, episodes_of(TASKS))["multiturn/postgres"]
    assert (turns["episodes"], turns["episode_pass@1"], turns["turn_suite_pass@1"]) == (2, 0.25, 0.9)
