"""The actions of an Interactive episode, their arguments and costs (ProcArena Table 2), and the budget.

Every action costs, even a malformed one: a known action its own cost, an unknown one or an answer
that is not an action `MALFORMED_COST`. The budget is 14 + 2 · ledger entries + 6 units: ProcArena's
base, two units (one question) per hidden fact, and a margin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_SAMPLE_ROWS = 20


@dataclass(frozen=True)
class Action:
    name: str
    env: str  # "user", "db" or "-" (submit)
    arguments: tuple[str, ...]  # required argument names
    cost: float
    observation: str  # what the solver gets back


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("ask_user", "user", ("question",), 2, "a natural-language answer"),
        Action("ask_selector", "user", ("question", "options"), 2, "the index of the intended option"),
        Action("get_schema", "db", (), 1, "the schema of the whole database"),
        Action("describe_table", "db", ("table",), 0.5, "the columns and row count of one table"),
        Action("sample_rows", "db", ("table",), 0.5, f"up to {MAX_SAMPLE_ROWS} sample rows (optional limit)"),
        Action("compile_plsql", "db", ("code",), 0.5, "compiler diagnostics (nothing is kept)"),
        Action("execute_scratch", "db", ("sql",), 1, "the result, on a scratch copy of the database"),
        Action("reset_scratch", "db", (), 0, "the scratch copy reset"),
        Action("submit", "-", ("code",), 0, "nothing: the episode ends and the code is graded"),
    )
}
MALFORMED_COST = 1.0
BASE_BUDGET, PER_ENTRY, MARGIN = 14, 2, 6
MAX_OPTIONS = 5  # ask_selector: up to five options, plus "none of these" at index 0
NONE_OF_THESE = "None of the following are correct."


def budget(entries: int) -> float:
    return BASE_BUDGET + PER_ENTRY * entries + MARGIN


class Malformed(ValueError):
    """An answer that is not a well-formed action; `cost` is what it is charged."""

    def __init__(self, detail: str, cost: float = MALFORMED_COST):
        super().__init__(detail)
        self.cost = cost


def parse_action(text: str) -> tuple[Action, dict]:
    """The action and arguments of a solver's answer `{"tool": ..., "args": {...}}`; Malformed otherwise."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f'not a JSON action ({exc.msg}): reply with one object {{"tool", "args"}}') from exc
    if not isinstance(parsed, dict) or parsed.get("tool") not in ACTIONS:
        tool = parsed.get("tool") if isinstance(parsed, dict) else None
        raise Malformed(f"unknown action {tool!r}; actions: {', '.join(ACTIONS)}")
    action, args = ACTIONS[parsed["tool"]], parsed.get("args") or {}
    missing = [a for a in action.arguments if not isinstance(args, dict) or a not in args]
    if missing:
        raise Malformed(f"{action.name} needs {', '.join(missing)}", action.cost)
    return action, args


def actions_text() -> str:
    """The action table as the solver is told it."""
    return "\n".join(
        f"- {a.name}({', '.join(a.arguments)}): {a.observation}; cost {a.cost:g}" for a in ACTIONS.values()
    )
