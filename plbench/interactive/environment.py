"""The environment of one Interactive episode: the actions' effects, the budget and the timeline.

The database actions work on a scratch copy of the task's database (a workspace in a rolled-back
session, as the unprivileged candidate role, with the task's setup run) that `reset_scratch` restores;
`compile_plsql` runs the code and rolls it back. The user actions go to the simulated user, which
answers from the ledger only. `submit` grades the code on the task's call suite in fresh workspaces
(plbench.procedures.grade), never in the scratch copy the solver changed. Each step is recorded with
its cost and what it revealed; the episode ends at a submission, when an action costs more than the
budget left, or after `MAX_STEPS` steps.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator

from psycopg import sql

from plbench.interactive.protocol import MAX_OPTIONS, MAX_SAMPLE_ROWS, Malformed, budget, parse_action
from plbench.interactive.user import SimulatedUser
from plbench.normalize.emit import schema_name
from plbench.procedures.grade import grade
from plbench.procedures.rows import grading_task
from plbench.procedures.workspace import DatabaseCopy, Workspace
from plbench.taskrow import TaskRow, as_record

MAX_STEPS = 60  # resetting the scratch copy costs nothing, so the budget alone cannot end an episode
SHOWN_RESULT_ROWS = 50
SCRATCH = "plb_scratch"
COMPILE = "plb_compile"


def _error(result) -> str:
    if result.timed_out:
        return "error: the statement timed out"
    return f"error: [{result.error.code}] {result.error.message}"


def _table_text(columns: list[str], rows: list[tuple], limit: int) -> str:
    lines = [" | ".join(columns)] + [" | ".join("NULL" if v is None else str(v) for v in r) for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows")
    return "\n".join(lines) if rows else "\n".join(lines + ["(no rows)"])


class Environment:
    """One episode on one Interactive task row (PostgreSQL); open it with `Environment.open`."""

    def __init__(self, engine, row: TaskRow, session, db: DatabaseCopy):
        self.engine, self.row, self.session, self.db = engine, row, session, db
        self.ledger = json.loads(row.ledger)
        self.user = SimulatedUser(self.ledger)
        self.total = budget(len(self.ledger))
        self.spent = 0.0
        self.timeline: list[dict] = []
        self.submission: str | None = None
        self.grade: dict | None = None
        self.termination: str | None = None
        self.setup = json.loads(row.setup_sql)
        self.scratch = Workspace(session, db)
        self._start_scratch()

    @classmethod
    @contextlib.contextmanager
    def open(cls, engine, row: TaskRow) -> Iterator[Environment]:
        schema = schema_name("spider1", row.database)
        with engine.session(reads=(schema,)) as session:
            yield cls(engine, row, session, DatabaseCopy.introspect(session, schema))

    @property
    def done(self) -> bool:
        return self.termination is not None

    @property
    def remaining(self) -> float:
        return self.total - self.spent

    def _start_scratch(self) -> str:
        self.session.execute(f"SAVEPOINT {SCRATCH}")
        for statement in self.setup:
            result = self.session.execute(statement)
            if not result.ok:
                return f"the task's setup failed: {_error(result)}"
        return "reset"

    # -- the actions ---------------------------------------------------------------------------------

    def _tables(self) -> dict[str, list[tuple]]:
        """Every table of the scratch copy (the database's and the setup's): name -> (column, type, key)."""
        literal = sql.Literal(self.scratch.schema).as_string(None)
        result = self.session.query(
            "SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
            "coalesce(a.attnum = ANY(i.indkey), false) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a "
            "ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped LEFT JOIN pg_catalog.pg_index i "
            f"ON i.indrelid = c.oid AND i.indisprimary WHERE c.relnamespace = {literal}::regnamespace "
            "AND c.relkind = 'r' ORDER BY c.relname, a.attnum"
        )
        tables: dict[str, list[tuple]] = {}
        for table, column, type_name, key in result.rows:
            tables.setdefault(table, []).append((column, type_name, key))
        return tables

    def _table(self, args: dict) -> str:
        tables = {t.lower(): t for t in self._tables()}
        name = args.get("table")
        if not isinstance(name, str) or name.strip('"').lower() not in tables:
            raise Malformed(f"no table {name!r}; tables: {', '.join(sorted(tables.values()))}", 0)
        return tables[name.strip('"').lower()]

    @staticmethod
    def _describe(table: str, columns: list[tuple]) -> str:
        described = ", ".join(f"{c} {t}" + (" (primary key)" if key else "") for c, t, key in columns)
        return f"table {table}: {described}"

    def get_schema(self, args: dict, step: int) -> tuple[str, dict]:
        return "\n".join(self._describe(t, cols) for t, cols in self._tables().items()), {}

    def describe_table(self, args: dict, step: int) -> tuple[str, dict]:
        table = self._table(args)
        count = self.session.query(f"SELECT pg_catalog.count(*) FROM {self._qualified(table)}")
        return f"{self._describe(table, self._tables()[table])}; {count.rows[0][0]} rows", {}

    def _qualified(self, table: str) -> str:
        return sql.Identifier(self.scratch.schema, table).as_string(None)

    def sample_rows(self, args: dict, step: int) -> tuple[str, dict]:
        table = self._table(args)
        limit = args.get("limit", MAX_SAMPLE_ROWS)
        if not isinstance(limit, int) or limit < 1:
            raise Malformed(f"limit must be a positive integer, not {limit!r}", 0)
        limit = min(limit, MAX_SAMPLE_ROWS)
        result = self.session.query(f"SELECT r.* FROM {self._qualified(table)} AS r ORDER BY r LIMIT {limit}")
        return _table_text(result.columns, result.rows, limit), {}

    def compile_plsql(self, args: dict, step: int) -> tuple[str, dict]:
        self.session.execute(f"SAVEPOINT {COMPILE}")
        result = self.session.execute(str(args["code"]))
        self.session.execute(f"ROLLBACK TO SAVEPOINT {COMPILE}")
        return ("compiled without errors" if result.ok else _error(result)), {}

    def execute_scratch(self, args: dict, step: int) -> tuple[str, dict]:
        result = self.session.query(str(args["sql"]))
        if not result.ok:
            return _error(result), {}
        return (_table_text(result.columns, result.rows, SHOWN_RESULT_ROWS) if result.columns else "ok"), {}

    def reset_scratch(self, args: dict, step: int) -> tuple[str, dict]:
        self.session.execute(f"ROLLBACK TO SAVEPOINT {SCRATCH}")
        return self._start_scratch(), {}

    def ask_user(self, args: dict, step: int) -> tuple[str, dict]:
        answer, revealed = self.user.ask_user(str(args["question"]), step)
        return answer, {"revealed": revealed}

    def ask_selector(self, args: dict, step: int) -> tuple[str, dict]:
        options = args["options"]
        if not isinstance(options, list) or not 1 <= len(options) <= MAX_OPTIONS:
            raise Malformed(f"options must be a list of 1 to {MAX_OPTIONS} strings", 0)
        index, shown, entry = self.user.ask_selector([str(o) for o in options], step)
        return str(index), {"index": index, "options": shown, "entry": entry, "revealed": [entry] if entry else []}

    def submit(self, args: dict, step: int) -> tuple[str, dict]:
        self.submission = str(args["code"])
        graded = grade(self.engine, grading_task(as_record(self.row), self.db), self.submission)
        self.grade = {
            "correct": graded.passed,
            "reason": graded.detail,
            "checks": {"submission": True, "ex": graded.passed},
            "call_verdicts": graded.call_verdicts,
            "category": graded.category,
        }
        self.termination = "submit"
        return "received", {"submitted": True}

    # -- one step ------------------------------------------------------------------------------------

    def step(self, text: str) -> str:
        """Carry out the solver's answer `text` (one JSON action); the observation it gets back."""
        if self.done:
            raise RuntimeError("the episode has ended")
        number = len(self.timeline) + 1
        try:
            action, args = parse_action(text)
        except Malformed as exc:
            return self._record(number, "malformed", {"raw": text[:500]}, f"error: {exc}", exc.cost, {})
        if action.cost > self.remaining:
            self.termination = "budget_exhausted"
            why = f"budget exhausted: {action.name} costs {action.cost:g}, {self.remaining:g} left"
            return self._record(number, action.name, args, why, 0, {})
        try:
            result, extra = getattr(self, action.name)(args, number)
        except Malformed as exc:
            result, extra = f"error: {exc}", {}
        observation = self._record(number, action.name, args, result, action.cost, extra)
        if not self.done and number >= MAX_STEPS:
            self.termination = "max_steps"
        return observation

    def _record(self, step: int, tool: str, args: dict, result: str, cost: float, extra: dict) -> str:
        self.spent += cost
        self.timeline.append(
            {"step": step, "actor": "tool", "tool": tool, "args": args, "result": result, "cost": cost, **extra}
        )
        return f"{result}\n(budget left: {self.remaining:g} of {self.total:g})"

    def stop(self, termination: str) -> None:
        self.termination = termination

    def record(self, run: str, model: str) -> dict:
        """The episode as ProcArena publishes its records: task, ledger, timeline, submission, grade."""
        row = self.row
        ledger = [
            {
                **e,
                "revealed_at": self.user.revealed.get(e["id"], (None, None))[0],
                "via": self.user.revealed.get(e["id"], (None, None))[1],
            }
            for e in self.ledger
        ]
        grade_record = self.grade or {
            "correct": False,
            "reason": f"no submission ({self.termination})",
            "checks": {"submission": False, "ex": False},
            "call_verdicts": [],
            "category": None,
        }
        tools = Counter(s["tool"] for s in self.timeline)
        recovered = len(self.user.revealed)
        return {
            "id": f"{run}--{row.task_id}",
            "run": run,
            "task_id": row.task_id,
            "direct_task_id": row.direct_task_id,
            "scenario": row.scenario,
            "dialect": row.dialect,
            "model": model,
            "max_steps": MAX_STEPS,
            "budget": {"total": self.total, "spent": self.spent, "remaining": self.remaining},
            "simulator": {"asking": "on", "matcher": "lexical", "selector": "on", "selector_options": MAX_OPTIONS},
            "grade": {**grade_record, "recovered": recovered, "oracle_size": len(self.ledger)},
            "summary": {
                "steps": len(self.timeline),
                "termination": self.termination,
                "submitted": self.submission is not None,
                "questions": {"ask_user": tools["ask_user"], "ask_selector": tools["ask_selector"]},
                "recovered": recovered,
                "oracle_size": len(self.ledger),
                "tools": dict(sorted(tools.items())),
            },
            "task": {"prompt": row.prompt, "materials": json.loads(row.materials or "{}")},
            "ledger": ledger,
            "timeline": self.timeline,
            "submission": {"form": "procedure", "text": self.submission} if self.submission is not None else None,
            "pair": {"direct_task_id": row.direct_task_id},
        }
