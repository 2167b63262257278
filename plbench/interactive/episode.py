"""The loop of an Interactive episode: a solver model answers with one action per turn until it submits,
the budget runs out or the steps do; the episode's record is written as JSON.

The solver talks through `plbench.llm` (any OpenAI-compatible endpoint, answers cached by request hash,
so a rerun of the same episodes replays them without a call). An endpoint error after the client's
retries ends the episode as `solver_error`, recorded like any other ending.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from plbench.evaluate import read_tasks
from plbench.interactive.environment import Environment
from plbench.interactive.protocol import actions_text
from plbench.operators.perturbations import SUBSET
from plbench.taskrow import TaskRow

SOLVER_SYSTEM = (
    "You write a PostgreSQL (PL/pgSQL) stored procedure for the task below. Some facts of its requirement are "
    "hidden, vague or contradicted: ask the user, who knows what the requirement means (never code), and "
    "explore a scratch copy of the database. Every action costs; your budget is {budget:g} units. Reply with "
    'exactly one JSON object per turn, {{"tool": "<action>", "args": {{...}}}}, and nothing else. Actions:\n'
    "{actions}\nSubmit the complete CREATE PROCEDURE with submit(code) before the budget runs out."
)


class SolverError(Exception):
    """The solver's endpoint failed (after the client's retries)."""


class LLMSolver:
    def __init__(self, client):
        self.client = client
        self.model = client.settings.model

    def start(self, prompt: str, total: float) -> list[dict]:
        system = SOLVER_SYSTEM.format(budget=total, actions=actions_text())
        return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]

    def act(self, messages: list[dict]) -> str:
        import openai

        try:
            return self.client.complete(messages)
        except openai.APIError as exc:
            raise SolverError(f"{type(exc).__name__}: {exc}") from exc


def run_episode(env: Environment, solver: LLMSolver) -> None:
    """Drive `env` with `solver` until the episode ends."""
    messages = solver.start(env.row.prompt, env.total)
    while not env.done:
        try:
            answer = solver.act(messages)
        except SolverError as exc:
            env.stop("solver_error")
            env.timeline.append({"step": len(env.timeline) + 1, "actor": "solver", "tool": None, "result": str(exc)})
            break
        observation = env.step(answer)
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": observation}]


def write_episode(record: dict, out_dir: Path) -> Path:
    """`<out>/episodes/<id>.json` (the id's slashes become `__`), written whole."""
    path = out_dir / "episodes" / (record["id"].replace("/", "__") + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def summarize(records: list[dict]) -> dict:
    """EX and how much of the ledger the solver recovered, over the episodes given."""
    n = len(records)
    if not n:
        return {"episodes": 0}
    correct = sum(r["grade"]["correct"] for r in records)
    recovered = sum(r["grade"]["recovered"] for r in records)
    hidden = sum(r["grade"]["oracle_size"] for r in records)
    endings: dict[str, int] = {}
    for r in records:
        endings[r["summary"]["termination"]] = endings.get(r["summary"]["termination"], 0) + 1
    return {
        "episodes": n,
        "ex": round(correct / n, 6),
        "recovered_share": round(recovered / hidden, 6) if hidden else None,
        "terminations": dict(sorted(endings.items())),
    }


def interactive_rows(release_dir: Path, dialect: str = "postgres") -> list[TaskRow]:
    """The release's Interactive rows of `dialect` (the environment runs on PostgreSQL), by task id."""
    names = [f.name for f in dataclasses.fields(TaskRow)]
    rows = [r for r in read_tasks(release_dir).values() if r["subset"] == SUBSET and r["dialect"] == dialect]
    return [TaskRow(**{n: r.get(n) for n in names}) for r in sorted(rows, key=lambda r: r["task_id"])]


def evaluate_interactive(release_dir: Path, engine, client, out_dir: Path, limit: int | None = None) -> dict:
    """One episode per Interactive row (the first `limit`), each written to `<out>/episodes/`, and the
    summary to `<out>/summary.json`."""
    rows = interactive_rows(release_dir)[:limit]
    if not rows:
        raise ValueError(f"{release_dir} has no PostgreSQL rows of subset {SUBSET}")
    run = f"{release_dir.name}-{client.settings.model}"
    records = []
    for row in rows:
        with Environment.open(engine, row) as env:
            run_episode(env, LLMSolver(client))
            records.append(env.record(run, client.settings.model))
        write_episode(records[-1], out_dir)
    summary = {"run": run, **summarize(records)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return summary
