"""One PostgreSQL session: a rolled-back transaction on one connection (see plbench.engines.postgres).

The session creates a private schema, puts it first on the search_path, and runs each statement
inside a savepoint so a failing statement does not poison the session. Leaving the session rolls
the whole transaction back; since PostgreSQL DDL is transactional, nothing the candidate created
survives, unless a statement ended the transaction itself (`COMMIT`): the session then says it
`escaped`, and the engine drops its schema and resets the candidate role as the administrator.

`call_all` is the grading channel: it calls a function once per argument list from the client and
hands back what `to_jsonb` made of each result. The test's expected values never enter the session.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import psycopg
from psycopg import pq, sql
from psycopg.pq import TransactionStatus

from plbench.engines.base import CallOutcome, Diagnostic, EngineUnavailable, ExecResult, QueryResult, budget_spent
from plbench.engines.watchdog import Watchdog

_SAVEPOINT = "plb_stmt"
_CALLS = "plb_calls"


def _diagnostic(exc: psycopg.Error) -> Diagnostic:
    # Errors raised by psycopg itself (no SQLSTATE) are things this engine does not
    # support, e.g. COPY to/from the client: report them as feature_not_supported.
    return Diagnostic(code=exc.sqlstate or "0A000", message=exc.diag.message_primary or str(exc))


def _type_name(conn: psycopg.Connection, oid: int) -> str:
    info = conn.adapters.types.get(oid)
    return info.name if info else str(oid)


class PostgresSession:
    """One rolled-back transaction on one connection; see the module docstring."""

    def __init__(
        self,
        conn: psycopg.Connection,
        schema: str,
        timeout_ms: int,
        reads: tuple[str, ...] = (),
        watchdog: Watchdog | None = None,
    ):
        self.schema = schema
        self._watchdog = watchdog
        self._reads = reads  # schemas of loaded databases, searched after the private one
        self._conn: psycopg.Connection | None = conn
        self._timeout_ms = timeout_ms
        self._lines: list[str] = []
        self.escaped = False  # a statement committed/rolled back our transaction itself
        self._xid = ""  # our transaction's id: another one at a check means a statement replaced it
        self._unchecked = False  # a statement ran since the transaction was last checked
        self._killed = False  # the watchdog ended the backend of the last statement
        self._statements = 0
        conn.add_notice_handler(self._on_notice)

    def _on_notice(self, diag: psycopg.errors.Diagnostic) -> None:
        self._lines.append(diag.message_primary or "")

    @property
    def backend_pid(self) -> int:
        return self._live().info.backend_pid

    @property
    def lost(self) -> bool:
        return self._conn is None or self._conn.closed or self._conn.broken

    def _live(self) -> psycopg.Connection:
        if self._conn is None:
            raise RuntimeError("this PostgreSQL session has ended")
        return self._conn

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """Turn a lost connection into EngineUnavailable; other errors pass through."""
        try:
            yield
        except psycopg.Error as exc:
            if self.lost:
                raise EngineUnavailable(
                    f"lost the PostgreSQL connection while {doing} ({exc.sqlstate or 'no SQLSTATE'}: "
                    f"{str(exc).strip()}); the server was stopped, restarted or ended this backend"
                ) from exc
            raise

    @contextlib.contextmanager
    def _watched(self, conn: psycopg.Connection, seconds: float | None = None) -> Iterator[None]:
        """Statements run here are cancelled past `seconds` (default: the timeout) plus a grace, and
        their backend is ended a grace later; `_killed` says whether that happened."""
        self._killed = False
        if self._watchdog is None:
            yield
            return
        limit = self._timeout_ms / 1000 if seconds is None else seconds
        token = self._watchdog.arm(conn, limit + self._watchdog.grace_s)
        try:
            yield
        finally:
            self._killed = self._watchdog.disarm(token)

    def _settings(self, timeout_ms: int | None = None) -> sql.Composed:
        """The harness's settings, asserted at the start and again before every graded call."""
        path = sql.SQL(", ").join(
            [sql.Identifier(self.schema), *map(sql.Identifier, self._reads), sql.Identifier("pg_catalog")]
        )
        return sql.SQL(
            # The task schema before pg_catalog, so user functions named like built-ins win.
            "SET LOCAL statement_timeout = {ms}; SET LOCAL search_path = {path}; SET LOCAL client_min_messages = notice"
        ).format(ms=sql.Literal(timeout_ms or self._timeout_ms), path=path)

    def begin(self) -> None:
        """Set up (or, after the transaction was ended by a statement, re-set up) the session."""
        setup = sql.SQL("SELECT pg_catalog.pg_current_xact_id()::text; CREATE SCHEMA IF NOT EXISTS {name}; ").format(
            name=sql.Identifier(self.schema)
        )
        with self._guard("starting a session"):
            self._xid = self._live().execute(setup + self._settings()).fetchone()[0]
        self._unchecked = False

    def execute(self, statement: str, before: str = "") -> ExecResult:
        """Run `statement` in a savepoint; `before`: the harness's own statements (known to parse, ending in
        `;`) sent with the savepoint, ahead of it."""
        conn = self._live()
        self._lines = []
        savepoint = self._next_savepoint()
        try:
            with self._guard("running a statement"), self._watched(conn):
                # Its own round trip: the server parses a whole query string before running any of it, so a
                # syntax error in the statement would otherwise leave no savepoint to roll back to.
                conn.execute(f"{before}SAVEPOINT {savepoint}")
                conn.execute(statement)  # no parameters: simple protocol, several statements allowed
        except EngineUnavailable:
            if self._killed:
                return self._killed_result()
            raise
        except psycopg.Error as exc:
            return self._failed(exc, savepoint)
        return self._ran(conn)

    def execute_own(self, text: str) -> tuple[ExecResult, QueryResult | None]:
        """The harness's own statements in one round trip, with the rows of the last one.

        Only for the harness's own text that is known to parse (calls of an installed procedure, state reads):
        the savepoint shares the round trip, and a string that does not parse runs none of it, not even the
        savepoint (see `execute`); a candidate's text could also leave a comment or a string open and swallow
        what follows it. When a statement fails, all of them are undone and the error is the result's; the
        rows are then None. Text that does not parse is a harness error (RuntimeError): the transaction,
        and all it held, is gone.
        """
        conn = self._live()
        self._lines = []
        savepoint = self._next_savepoint()
        try:
            with self._guard("running the harness's statements"), self._watched(conn):
                cur = conn.execute(f"SAVEPOINT {savepoint}; {text}")
                while cur.nextset():
                    pass
                rows = cur.fetchall() if cur.description else []
                columns = [d.name for d in cur.description or ()]
                types = [_type_name(conn, d.type_code) for d in cur.description or ()]
        except EngineUnavailable:
            if self._killed:
                return self._killed_result(), None
            raise
        except psycopg.Error as exc:
            escaped = self.escaped
            failed = self._failed(exc, savepoint)
            if self.escaped and not escaped:
                raise RuntimeError(f"the harness's own statements did not run ({exc}): {text[:300]}") from exc
            return failed, None
        return self._ran(conn), QueryResult(columns, types, rows)

    def _next_savepoint(self) -> str:
        # A fresh savepoint per statement, never released: a session runs a handful of
        # statements, and skipping RELEASE saves a round trip on every one of them.
        self._statements += 1
        self._unchecked = True
        return f"{_SAVEPOINT}_{self._statements}"

    def _ran(self, conn: psycopg.Connection) -> ExecResult:
        lines, self._lines = self._lines, []  # re-setting the session below must not add its notices
        if conn.info.transaction_status == TransactionStatus.IDLE:
            self._settle("")  # the statement ran COMMIT or ROLLBACK itself
        return ExecResult(lines=lines)

    def _killed_result(self) -> ExecResult:
        lines, self._lines = self._lines, []
        diagnostic = Diagnostic("57014", "still running after the timeout and a cancel: its backend was ended")
        return ExecResult(lines=lines, error=diagnostic, timed_out=True)

    def query(self, statement: str) -> QueryResult:
        """Rows of one query (with column names and type names), or its diagnostic."""
        conn = self._live()
        savepoint = self._next_savepoint()
        try:
            with self._guard("running a query"), self._watched(conn):
                conn.execute(f"SAVEPOINT {savepoint}")
                cur = conn.execute(statement)
                rows = cur.fetchall() if cur.description else []
                columns = [d.name for d in cur.description or ()]
                types = [_type_name(conn, d.type_code) for d in cur.description or ()]
        except EngineUnavailable:
            if self._killed:
                killed = self._killed_result()
                return QueryResult(error=killed.error, timed_out=True)
            raise
        except psycopg.Error as exc:
            failed = self._failed(exc, savepoint)
            return QueryResult(error=failed.error, timed_out=failed.timed_out)
        return QueryResult(columns, types, rows)

    # ---- the grading channel ---------------------------------------------------------------

    def call_all(self, function: str, argument_lists: list[list[str]], budget_s: float | None = None) -> list:
        """`to_jsonb(<schema>.<function>(<arguments>))` per argument list, one CallOutcome each.

        The calls share one budget (default: the statement timeout), as the cases of one test block
        did. They go in one round trip; when one raises, they are run again one at a time, each in a
        savepoint, so every call gets its own outcome. A call still running when the budget is spent
        is a timeout, and so is every call after it. The harness's timeout and search_path are set
        again first, whatever the candidate's statements set, and the transaction is checked to
        still be the session's own.
        """
        budget = self._timeout_ms / 1000 if budget_s is None else budget_s
        conn = self._live()
        target = sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.SQL(function)).as_string(conn)
        calls = [f"SELECT pg_catalog.to_jsonb({target}({', '.join(args)}))" for args in argument_lists]
        start = time.monotonic()
        batch = self._calls(calls, budget)
        if batch is not None:
            return batch
        outcomes: list[CallOutcome] = []
        for call in calls:
            left = budget - (time.monotonic() - start)
            if left <= 0 or (outcomes and outcomes[-1].timed_out) or self.lost:
                outcomes.append(budget_spent("57014"))
                continue
            outcomes.append(self._one_call(call, left))
        return outcomes

    def _check_transaction(self, xid: str | None) -> None:
        if xid != self._xid:
            self.escaped = True  # a statement ended our transaction and began another one
        self._unchecked = False

    def _calls(self, calls: list[str], budget_s: float) -> list[CallOutcome] | None:
        """All calls in one round trip; None when one failed (the caller runs them one by one)."""
        conn = self._live()
        head = f"SAVEPOINT {_CALLS}; {self._settings(max(1, round(budget_s * 1000))).as_string(conn)}; "
        text = head + "SELECT pg_catalog.pg_current_xact_id_if_assigned()::text; " + "; ".join(calls)
        self._lines = []
        try:
            with self._guard("calling the candidate"), self._watched(conn, budget_s):
                cur = conn.execute(text)
                results = []
                while True:
                    if cur.description is not None:
                        results.append(cur.fetchone()[0])
                    if not cur.nextset():
                        break
        except EngineUnavailable:
            if self._killed:
                return [CallOutcome(timed_out=True, error=self._killed_result().error) for _ in calls]
            raise
        except psycopg.Error as exc:
            timed_out = isinstance(exc, psycopg.errors.QueryCanceled)
            self._settle(f"ROLLBACK TO SAVEPOINT {_CALLS}")
            if timed_out:
                return [CallOutcome(timed_out=True, error=_diagnostic(exc)) for _ in calls]
            return None
        self._check_transaction(results[0])
        return [CallOutcome(value=v) for v in results[1:]]

    def _one_call(self, call: str, budget_s: float) -> CallOutcome:
        conn = self._live()
        settings = self._settings(max(1, round(budget_s * 1000))).as_string(conn)
        try:
            with self._guard("calling the candidate"), self._watched(conn, budget_s):
                cur = conn.execute(f"SAVEPOINT {_CALLS}; {settings}; {call}")
                while cur.description is None and cur.nextset():
                    pass
                value = cur.fetchone()[0]
        except EngineUnavailable:
            if self._killed:
                return CallOutcome(timed_out=True, error=self._killed_result().error)
            raise
        except psycopg.Error as exc:
            self._settle(f"ROLLBACK TO SAVEPOINT {_CALLS}")
            return CallOutcome(error=_diagnostic(exc), timed_out=isinstance(exc, psycopg.errors.QueryCanceled))
        return CallOutcome(value=value)

    # ---- after a statement -----------------------------------------------------------------

    def _failed(self, exc: psycopg.Error, savepoint: str) -> ExecResult:
        lines, self._lines = self._lines, []  # notices raised before the error are part of the output
        self._finish_copy()
        self._settle(f"ROLLBACK TO SAVEPOINT {savepoint}")
        timed_out = isinstance(exc, psycopg.errors.QueryCanceled)
        return ExecResult(lines=lines, error=_diagnostic(exc), timed_out=timed_out)

    def _finish_copy(self) -> None:
        """psycopg refuses COPY in execute() and leaves the protocol mid-COPY: end it.

        COPY FROM STDIN is aborted, COPY TO STDOUT drained, so the connection is usable again.
        """
        pgconn = self._live().pgconn
        if self._live().info.transaction_status != TransactionStatus.ACTIVE:
            return
        with self._guard("ending a COPY"):
            while (res := pgconn.get_result()) is not None:
                if res.status == pq.ExecStatus.COPY_OUT:
                    while pgconn.get_copy_data(0)[0] >= 0:
                        pass
                elif res.status == pq.ExecStatus.COPY_IN:
                    pgconn.put_copy_end(b"COPY FROM STDIN is not supported by plbench")

    def _settle(self, savepoint_sql: str) -> None:
        """Get back to 'inside our transaction, no savepoint open' after a statement."""
        conn = self._live()
        with self._guard("cleaning up after a statement"):
            if conn.info.transaction_status == TransactionStatus.IDLE:
                # The statement ran COMMIT/ROLLBACK: the SET LOCALs are gone and what it
                # committed is permanent. Restore the environment; drop the schema at the end.
                self.escaped = True
                self.begin()
                return
            try:
                conn.execute(savepoint_sql)
            except psycopg.Error:
                if self.lost:
                    raise
                # Our savepoint is gone (the statement released it or replaced the transaction).
                self.escaped = True
                conn.rollback()
                self.begin()

    def finish(self) -> bool:
        """Roll everything back; True when the connection is clean enough to reuse."""
        conn, self._conn = self._conn, None
        if conn is None or conn.closed or conn.broken:
            return False
        conn.remove_notice_handler(self._on_notice)
        try:
            if self._unchecked and not self.escaped:
                self._check_transaction(
                    conn.execute("SELECT pg_catalog.pg_current_xact_id_if_assigned()::text").fetchone()[0]
                )
            conn.rollback()
            if self.escaped:
                # Something was committed: the engine drops our schema as its administrator; do not
                # reuse a connection whose session settings or temporary objects may be committed too.
                return False
            # DISCARD ALL clears what a rollback does not: PREPAREd statements, session
            # advisory locks, LISTEN, cached plans. It refuses to run inside a transaction.
            conn.autocommit = True
            conn.execute("DISCARD ALL")
            conn.autocommit = False
            return True
        except psycopg.Error:
            return False
