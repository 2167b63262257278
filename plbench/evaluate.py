"""Score candidate solutions against a release: per task and dialect, install the setup, create
the candidate, run the task's test block, and keep the verdict of every case.

A candidate that does not install is classified from the engine's diagnostic; an ERROR case
from the code it printed (plbench.validation.diagnostics). When the task's own setup or the
harness fails, the row is a `reference_error` and is left out of the scores.

Metrics per subset and dialect, over the candidates given:
- Mean Test Pass@1: the mean, over tasks, of the share of cases passed;
- Suite Pass@1: the share of tasks whose every case passed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench.engines.base import Engine
from plbench.mbpp.artifacts import parse_verdicts
from plbench.validation.diagnostics import REFERENCE_ERROR, WRONG_LOGIC, case_error_category, category_of

CASE_SCHEMA = pa.schema(
    [
        ("task_id", pa.string()),
        ("subset", pa.string()),
        ("dialect", pa.string()),
        ("case", pa.int32()),
        ("verdict", pa.string()),
        ("category", pa.string()),
        ("detail", pa.string()),
    ]
)


@dataclass(frozen=True)
class Candidate:
    task_id: str
    dialect: str
    code: str


def read_solutions(path: Path) -> list[Candidate]:
    """JSONL of {task_id, dialect, code}; a malformed line is an error naming the line."""
    candidates = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            candidates.append(Candidate(str(row["task_id"]), str(row["dialect"]), str(row["code"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} line {n}: not a {{task_id, dialect, code}} object ({exc})") from exc
    return candidates


def split_script(text: str, dialect: str) -> list[str]:
    """Statements of a release script: Oracle's are separated by `/` lines; PostgreSQL runs it whole."""
    if not text.strip():
        return []
    if dialect != "oracle":
        return [text]
    return [s.strip() for s in text.split("\n/\n") if s.strip() and s.strip() != "/"]


def evaluate_candidate(engine: Engine, task: dict, code: str) -> list[dict]:
    """Per-case result rows of one candidate for one task."""
    total = len(json.loads(task["test_cases"]))
    base = {"task_id": task["task_id"], "subset": task["subset"], "dialect": task["dialect"]}

    def every_case(verdict: str, category: str, detail: str) -> list[dict]:
        return [
            {**base, "case": n, "verdict": verdict, "category": category, "detail": detail[:500]}
            for n in range(1, total + 1)
        ]

    with engine.session() as session:
        for statement in split_script(task["setup_sql"], task["dialect"]):
            setup = session.execute(statement)
            if not setup.ok:
                return every_case("NOT_RUN", REFERENCE_ERROR, f"setup failed: {setup.error}")
        created = session.execute(code)
        if not created.ok:
            detail = "timed out" if created.timed_out else f"{created.error.code}: {created.error.message}"
            return every_case("NOT_RUN", category_of(created.error.code if created.error else None), detail)
        results = [session.execute(s) for s in split_script(task["test_block"], task["dialect"])]
    run = results[-1]
    if run.timed_out:  # the candidate looped past the statement timeout
        return every_case("TIMEOUT", WRONG_LOGIC, "statement timeout")
    if not all(r.ok for r in results):
        bad = next(r for r in results if not r.ok)
        if task.get("replay_status") == "passed" and bad.error is not None:
            # The block passed replay on this engine, so what broke it is the candidate's code
            # (it dropped or replaced the harness's types, say): never excluded as a reference error.
            return every_case(
                "NOT_RUN",
                category_of(bad.error.code),
                f"test block failed after the candidate: {bad.error.code}: {bad.error.message}",
            )
        return every_case("NOT_RUN", REFERENCE_ERROR, f"test block failed: {bad.error}")
    verdicts = parse_verdicts(run.lines, total).verdicts
    rows = []
    for n in range(1, total + 1):
        verdict = verdicts.get(n, "MISSING")
        kind, _, detail = verdict.partition(" ")
        category = None if kind == "PASS" else case_error_category(detail) if kind == "ERROR" else WRONG_LOGIC
        rows.append({**base, "case": n, "verdict": kind, "category": category, "detail": detail[:500]})
    return rows


def summarize(rows: list[dict]) -> dict:
    """Mean Test Pass@1 and Suite Pass@1 per subset and dialect; reference errors left out."""
    by_task: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[(row["subset"], row["dialect"], row["task_id"])].append(row)
    groups: dict[tuple, list[list[dict]]] = defaultdict(list)
    excluded: dict[tuple, int] = defaultdict(int)
    for (subset, dialect, _), cases in by_task.items():
        if any(c["category"] == REFERENCE_ERROR for c in cases):
            excluded[(subset, dialect)] += 1
        else:
            groups[(subset, dialect)].append(cases)
    summary = {}
    for key in sorted(set(groups) | set(excluded)):
        tasks = groups.get(key, [])
        shares = [sum(c["verdict"] == "PASS" for c in cases) / len(cases) for cases in tasks]
        categories = defaultdict(int)
        for cases in tasks:
            failed = [c["category"] for c in cases if c["verdict"] != "PASS"]
            if failed:
                categories[max(set(failed), key=failed.count)] += 1
        summary[f"{key[0]}/{key[1]}"] = {
            "tasks": len(tasks),
            "reference_errors": excluded.get(key, 0),
            "mean_test_pass@1": round(sum(shares) / len(shares), 4) if shares else None,
            "suite_pass@1": round(sum(s == 1.0 for s in shares) / len(shares), 4) if shares else None,
            "failed_tasks_by_category": dict(sorted(categories.items())),
        }
    return summary


def markdown(summary: dict, release: str, solutions: str) -> str:
    lines = [
        f"# Evaluation of `{solutions}` on release `{release}`",
        "",
        "| subset/dialect | tasks | Mean Test Pass@1 | Suite Pass@1 | reference errors (excluded) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, s in summary.items():
        lines.append(
            f"| {key} | {s['tasks']} | {s['mean_test_pass@1']} | {s['suite_pass@1']} | {s['reference_errors']} |"
        )
    lines += ["", "Failed tasks by their most frequent failure category:", ""]
    lines += [f"- {key}: {s['failed_tasks_by_category'] or 'none'}" for key, s in summary.items()]
    return "\n".join(lines) + "\n"


def read_tasks(release_dir: Path) -> dict[tuple[str, str], dict]:
    """The release's task rows by (task_id, dialect)."""
    return {(r["task_id"], r["dialect"]): r for r in pq.read_table(release_dir / "tasks.parquet").to_pylist()}


def run_candidates(
    tasks: dict[tuple[str, str], dict],
    candidates: list[Candidate],
    engines: dict[str, Engine],
    release: str = "the release",
) -> Iterator[tuple[int, Candidate, dict, list[dict]]]:
    """(index, candidate, task row, case rows) of every candidate whose dialect has an engine.

    The one execution path of candidates: `evaluate` scores what it yields and the implementation
    cross-check (plbench.validation.crosscheck) compares it with the Python reference.
    """
    for index, cand in enumerate(candidates):
        task = tasks.get((cand.task_id, cand.dialect))
        if task is None:
            raise ValueError(f"{cand.task_id} ({cand.dialect}) is not a task of {release}")
        if cand.dialect in engines:
            yield index, cand, task, evaluate_candidate(engines[cand.dialect], task, cand.code)


def evaluate(release_dir: Path, candidates: list[Candidate], engines: dict[str, Engine]) -> list[dict]:
    """Case rows for every candidate whose task is in the release and whose dialect has an engine."""
    ran = run_candidates(read_tasks(release_dir), candidates, engines, f"release {release_dir.name}")
    return [row for _, _, _, rows in ran for row in rows]


def write_results(out_dir: Path, rows: list[dict], summary_md: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=CASE_SCHEMA), out_dir / "cases.parquet")
    (out_dir / "summary.md").write_text(summary_md)
