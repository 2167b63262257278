"""Case rows as they come, the summary over them, and the files of an evaluation.

Rows are appended to `cases.jsonl` as each candidate is graded, one line per candidate holding all
its rows, flushed at once, so an interrupted run loses at most the candidate it was grading and
`resume` continues after the last complete line. The first line names the release and the solutions
file (by checksum), so a resume never mixes two runs. At the end `cases.parquet` (one row per case
and candidate) and `summary.md` are written from the log.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench.diagnostics import REFERENCE_ERROR
from plbench.grading.episodes import episode_metrics

NOT_GRADED = "not_graded"  # no verdict on the code: unknown task or dialect, no engine; outside the scores
EXCLUDED = (REFERENCE_ERROR, NOT_GRADED)

CASE_SCHEMA = pa.schema(
    [
        ("candidate", pa.int32()),  # the candidate's 0-based line among the solutions file's candidates
        ("task_id", pa.string()),
        ("subset", pa.string()),
        ("dialect", pa.string()),
        ("case", pa.int32()),
        ("verdict", pa.string()),
        ("category", pa.string()),
        ("detail", pa.string()),
    ]
)


class ResultLog:
    """The append-only `cases.jsonl` of one evaluation (see the module docstring)."""

    def __init__(self, path: Path, run: dict, resume: bool = False):
        self.path = path
        self.rows: dict[int, list[dict]] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            self._load(run)
            self._file = path.open("a", encoding="utf-8")
        else:
            self._file = path.open("w", encoding="utf-8")
            self._write(run)

    def _load(self, run: dict) -> None:
        lines = self.path.read_text(encoding="utf-8").split("\n")
        if json.loads(lines[0]) != run:
            raise ValueError(
                f"{self.path} belongs to another run ({lines[0][:200]}); resume with the same release and "
                "solutions, or start again without --resume"
            )
        complete = len(lines[0]) + 1
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                break  # the line being written when the run stopped
            self.rows[entry["candidate"]] = entry["rows"]
            complete += len(line) + 1
        with self.path.open("r+", encoding="utf-8") as f:
            f.truncate(complete)  # drop a partial last line

    def _write(self, entry: dict) -> None:
        self._file.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()

    def add(self, candidate: int, rows: list[dict]) -> None:
        self.rows[candidate] = rows
        self._write({"candidate": candidate, "rows": rows})

    def all_rows(self) -> list[dict]:
        return [row for index in sorted(self.rows) for row in self.rows[index]]

    def close(self) -> None:
        self._file.close()


def case_row(n: int, verdict: str, category: str | None, detail: str) -> dict:
    """One case's row of a candidate's grading (case numbers from 1), its detail cut to 500 characters."""
    return {"case": n, "verdict": verdict, "category": category, "detail": detail[:500]}


def every_case(cases: int, verdict: str, category: str | None, detail: str) -> list[dict]:
    """The same row for each of `cases` cases."""
    return [case_row(n, verdict, category, detail) for n in range(1, cases + 1)]


def summarize(rows: list[dict], episodes: dict[str, tuple[str, int]] | None = None) -> dict:
    """Mean Test Pass@1 and Suite Pass@1 per subset and dialect (reference errors and rows not graded
    left out). A task's share is the mean over its candidates, so several candidates of one task count
    as one task, each candidate once. Tasks that are turns of a conversation (`episodes`: task_id ->
    (conversation_id, turn_count), plbench.grading.episodes) also give Episode and Turn Suite Pass@1."""
    by_candidate: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        by_candidate[(row["subset"], row["dialect"], row["task_id"], row["candidate"])].append(row)
    tasks: dict[tuple, dict[str, list[list[dict]]]] = defaultdict(lambda: defaultdict(list))
    excluded: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (subset, dialect, task_id, _), cases in by_candidate.items():
        reason = next((c["category"] for c in cases if c["category"] in EXCLUDED), None)
        if reason:
            excluded[(subset, dialect)][reason] += 1
        else:
            tasks[(subset, dialect)][task_id].append(cases)
    summary = {}
    for key in sorted(set(tasks) | set(excluded), key=lambda k: tuple(map(str, k))):
        graded = tasks.get(key, {})
        shares, suites, categories, turns = [], [], defaultdict(int), {}
        for task_id, candidates in graded.items():
            passed = [sum(c["verdict"] == "PASS" for c in cases) / len(cases) for cases in candidates]
            shares.append(sum(passed) / len(passed))
            suites.append(sum(p == 1.0 for p in passed) / len(passed))
            if task_id in (episodes or {}):
                turns[task_id] = suites[-1]
            for cases in candidates:
                failed = [c["category"] for c in cases if c["verdict"] != "PASS"]
                if failed:
                    categories[max(set(failed), key=failed.count)] += 1
        summary[f"{key[0]}/{key[1]}"] = {
            "tasks": len(graded),
            "candidates": sum(len(c) for c in graded.values()),
            "reference_errors": excluded.get(key, {}).get(REFERENCE_ERROR, 0),
            "not_graded": excluded.get(key, {}).get(NOT_GRADED, 0),
            "mean_test_pass@1": round(sum(shares) / len(shares), 4) if shares else None,
            "suite_pass@1": round(sum(suites) / len(suites), 4) if suites else None,
            "failed_candidates_by_category": dict(sorted(categories.items())),
        } | episode_metrics(turns, episodes or {})
    return summary


def summary_line(key: str, s: dict) -> str:
    line = (
        f"{key}: Mean Test Pass@1 {s['mean_test_pass@1']}, Suite Pass@1 {s['suite_pass@1']} "
        f"over {s['tasks']} tasks ({s['candidates']} candidates; {s['reference_errors']} reference errors excluded"
    )
    line += f"; {s['not_graded']} not graded)" if s["not_graded"] else ")"
    if "episodes" in s:
        line += f"; Episode Pass@1 {s['episode_pass@1']} over {s['episodes']} conversations"
        line += f", Turn Suite Pass@1 {s['turn_suite_pass@1']}"
    return line


def markdown(summary: dict, release: str, solutions: str) -> str:
    lines = [
        f"# Evaluation of `{solutions}` on release `{release}`",
        "",
        "| subset/dialect | tasks | candidates | Mean Test Pass@1 | Suite Pass@1 | reference errors (excluded) "
        "| not graded |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, s in summary.items():
        lines.append(
            f"| {key} | {s['tasks']} | {s['candidates']} | {s['mean_test_pass@1']} | {s['suite_pass@1']} "
            f"| {s['reference_errors']} | {s['not_graded']} |"
        )
    lines += ["", "Failed candidates by their most frequent failure category:", ""]
    lines += [f"- {key}: {s['failed_candidates_by_category'] or 'none'}" for key, s in summary.items()]
    multiturn = [(key, s) for key, s in summary.items() if "episodes" in s]
    if multiturn:
        lines += ["", "Multi-turn subsets (every turn of an episode must pass):", ""]
        lines += [
            f"- {key}: Episode Pass@1 {s['episode_pass@1']} over {s['episodes']} conversations, "
            f"Turn Suite Pass@1 {s['turn_suite_pass@1']}"
            for key, s in multiturn
        ]
    return "\n".join(lines) + "\n"


def write_results(out_dir: Path, rows: list[dict], summary_md: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=CASE_SCHEMA), out_dir / "cases.parquet")
    (out_dir / "summary.md").write_text(summary_md)
