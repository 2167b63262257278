"""The engine interface every target database implements.

An engine hands out isolated sessions. Inside a session, each `execute` runs one
statement (DDL, a program unit, or an anonymous block) under a statement timeout
and returns the output lines the statement produced (PostgreSQL notices,
Oracle DBMS_OUTPUT) and a structured diagnostic when it failed. A failed
statement does not poison the session, and nothing a session did survives it,
so a bad candidate cannot disturb the next one.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Diagnostic:
    """A database error: `code` is a SQLSTATE (PostgreSQL) or ORA-/PLS- code (Oracle)."""

    code: str
    message: str


@dataclass(frozen=True)
class ExecResult:
    lines: list[str] = field(default_factory=list)
    error: Diagnostic | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


@dataclass(frozen=True)
class QueryResult:
    columns: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)  # the engine's type name per column
    rows: list[tuple] = field(default_factory=list)
    error: Diagnostic | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


@dataclass(frozen=True)
class CallOutcome:
    """One call of a function from the client: the engine's rendering of its result, or why none.

    PostgreSQL renders the result with `to_jsonb`, Oracle as the driver fetches it; either way the
    grader decodes it by the declared type (plbench.typed_json.decode).
    """

    value: Any = None
    error: Diagnostic | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


def budget_spent(code: str) -> CallOutcome:
    """A call not made, or stopped, because the calls' shared time budget was spent."""
    return CallOutcome(timed_out=True, error=Diagnostic(code, "the time budget of the calls was spent"))


class EngineUnavailable(RuntimeError):
    """The engine is not configured or cannot be reached; carries the reason."""


class Session(Protocol):
    def execute(self, statement: str, setup: bool = False) -> ExecResult: ...

    def call_all(
        self, function: str, argument_lists: list[list[str]], budget_s: float | None = None, last: bool = False
    ) -> list[CallOutcome]: ...


class Engine(Protocol):
    dialect: str
    copies_databases: bool  # a session loads a task's database itself (Oracle) rather than reading a loaded one
    statement_timeout_s: float  # how long one statement or call may run

    def version(self) -> str: ...

    def session(self) -> contextlib.AbstractContextManager[Session]: ...

    def loaded(self, schema: str | None) -> bool: ...

    def reachable(self) -> bool: ...

    def close(self) -> None: ...
