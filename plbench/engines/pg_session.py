"""One PostgreSQL session: a rolled-back transaction on one connection (see plbench.engines.postgres).

The session creates a private schema, puts it first on the search_path, and runs each statement
inside a savepoint so a failing statement does not poison the session. Leaving the session rolls
the whole transaction back; since PostgreSQL DDL is transactional, nothing the candidate created
survives, unless a statement ended the transaction itself (`COMMIT`): the session then says it
`escaped`, and the engine drops its schema and resets the candidate role as the administrator.

Round trips are what a session costs, so the harness folds its own statements into as few as it can:
the session writes its own BEGIN (the connection is in autocommit mode while the session holds it, so
psycopg sends none) in the statements that set the session up, which also open the savepoint the
first statement runs under, and they go in the first statement's round trip (`_begin_with`); rolling
back to a statement's savepoint leaves that savepoint open for the next statement; and leaving the
session is one round trip (the transaction check, ROLLBACK, and DISCARD ALL's parts, since DISCARD ALL
itself refuses to share a query string). A session that ran nothing costs none.

`call_all` is the grading channel: it calls a function once per argument list from the client and
hands back what `to_jsonb` made of each result. The test's expected values never enter the session.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import psycopg
from psycopg import pq, sql
from psycopg.pq import TransactionStatus

from plbench.engines import pg_wire
from plbench.engines.base import CallOutcome, EngineUnavailable, ExecResult, QueryResult, budget_spent
from plbench.engines.watchdog import Watchdog

_SAVEPOINT = "plb_stmt"
_CALLS = "plb_calls"


class PostgresSession:
    """One rolled-back transaction on one connection; see the module docstring."""

    def __init__(
        self,
        conn: psycopg.Connection,
        schema: str,
        timeout_ms: int,
        reads: tuple[str, ...] = (),
        watchdog: Watchdog | None = None,
        reconnect: Callable[[], psycopg.Connection] | None = None,
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
        self._quoted = sql.Identifier(schema).as_string(conn)
        # The task schema before pg_catalog, so user functions named like built-ins win.
        self._search_path = ", ".join(sql.Identifier(s).as_string(conn) for s in (schema, *reads, "pg_catalog"))
        self._ended = False  # the last calls' round trip ended the session
        self._spare: str | None = None  # a savepoint open with nothing run since: the next statement's
        self._begun = False  # set up in the first round trip that needs it (see the module docstring)
        # A new connection in place of a pooled one found closed at the first round trip (the server restarted).
        self._reconnect = reconnect
        self._adopt(conn)

    def _adopt(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        conn.autocommit = True  # the session writes its own BEGIN (see the module docstring)
        conn.add_notice_handler(self._on_notice)

    def _replace_stale_connection(self) -> None:
        """Go on, not yet begun, on a new connection: the pooled one was closed before the session began."""
        stale, reconnect, self._reconnect = self._live(), self._reconnect, None
        stale.close()
        self._adopt(reconnect())

    def _on_notice(self, diag: psycopg.errors.Diagnostic) -> None:
        self._lines.append(diag.message_primary or "")

    @property
    def backend_pid(self) -> int:
        return self._live().info.backend_pid

    @property
    def savepoints(self) -> int:
        """Savepoints this session opened: one per statement it ran, and the spare opened ahead of the next."""
        return self._statements

    @property
    def lost(self) -> bool:
        return self._conn is None or self._conn.closed or self._conn.broken

    def _live(self) -> psycopg.Connection:
        if self._conn is None or self._ended:
            raise RuntimeError("this PostgreSQL session has ended")
        return self._conn

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """Turn a lost connection into EngineUnavailable; other errors pass through."""
        try:
            yield
        except psycopg.Error as exc:
            if self.lost:
                raise pg_wire.lost(doing, exc) from exc
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

    def _settings(self, timeout_ms: int | None = None) -> str:
        """The harness's settings, asserted at the start and again before every graded call."""
        return (
            f"SET LOCAL statement_timeout = {int(timeout_ms or self._timeout_ms)}; "
            f"SET LOCAL search_path = {self._search_path}; SET LOCAL client_min_messages = notice"
        )

    def _opening(self, spare: str) -> list[str]:
        """The statements that set the session up: begin a transaction (only ever sent with none open: on a
        fresh connection, or after a statement ended one), read its id, create the private schema, assert the
        settings, and open the savepoint `spare` the next statement runs under."""
        return [
            "BEGIN",
            "SELECT pg_catalog.pg_current_xact_id()::text",
            f"CREATE SCHEMA IF NOT EXISTS {self._quoted}",
            self._settings(),
            f"SAVEPOINT {spare}",
        ]

    def begin(self) -> None:
        """Set up (or, after the transaction was ended by a statement, re-set up) the session in a round trip
        of its own."""
        spare = self._new_savepoint()
        with self._guard("starting a session"):
            try:
                cur = self._live().execute("; ".join(self._opening(spare)))
            except psycopg.Error as exc:
                if self.lost:
                    raise
                raise pg_wire.SessionSetupError(exc) from exc
            cur.nextset()  # past BEGIN's result to the transaction id
            self._begun_in(cur.fetchone()[0], spare)
        self._unchecked = False

    def _begun_in(self, xid: str, spare: str) -> None:
        self._xid, self._spare, self._begun, self._reconnect = xid, spare, True, None

    def _ensure_begun(self) -> None:
        if self._begun:
            return
        try:
            self.begin()
        except EngineUnavailable:
            if self._reconnect is None:
                raise
            self._replace_stale_connection()
            self.begin()

    def _begin_with(self, statement: str, setup: bool) -> ExecResult:
        """The session's first statement in the round trip that sets the session up (see `execute`).

        The server parses a whole query string before it runs any of it, so a syntax error in the statement
        runs nothing, not even BEGIN: that is the statement's error, and the session then begins alone. Else the
        results say where a failure was: in the set-up (the harness's error, SessionSetupError) or in the
        statement, which is then undone to the set-up's savepoint, as `execute` undoes any statement.
        """
        spare = self._new_savepoint()
        after = self._new_savepoint() if setup else None
        opening = self._opening(spare)
        text = "; ".join([*opening, f"{statement}\n; SAVEPOINT {after}" if after else statement])
        conn = self._live()
        self._lines = []
        try:
            with self._watched(conn):
                results, lost = pg_wire.results(conn, text), None
        except psycopg.Error as exc:
            results, lost = [], exc
        if self.lost:
            if self._killed:
                return self._killed_result()
            if self._reconnect is not None and not any(r.status in pg_wire.RAN for r in results):
                self._replace_stale_connection()  # closed before the session began: none of the string ran
                return self._begin_with(statement, setup)
            raise pg_wire.lost("starting a session", lost or pg_wire.error_of(results[-1], conn))
        if lost is not None:
            raise lost
        failed = next((n for n, r in enumerate(results) if r.status not in pg_wire.RAN), None)
        if failed == 0 and conn.info.transaction_status == TransactionStatus.IDLE:
            lines, error = self._lines, pg_wire.error_of(results[0], conn)
            self.begin()
            return ExecResult(lines=lines, error=pg_wire.diagnostic(error))
        if failed is not None and failed < len(opening):
            raise pg_wire.SessionSetupError(pg_wire.error_of(results[failed], conn))
        self._begun_in(results[1].get_value(0, 0).decode(), spare)
        self._spare, self._unchecked = None, True  # the statement ran under `spare`
        if failed is not None:
            return self._failed(pg_wire.error_of(results[failed], conn), spare)
        ran = self._ran(conn, spare)
        self._spare = self._spare or after
        return ran

    def execute(self, statement: str, before: str = "", setup: bool = False) -> ExecResult:
        """Run `statement` in a savepoint; `before`: the harness's own statements (known to parse, ending in
        `;`) sent with the savepoint, ahead of it. `setup`: the statement is a task's own setup, which leaves
        the transaction open, so the savepoint the next statement runs under goes in its round trip, after it
        (a syntax error in the setup runs neither). The session's first statement shares the round trip that
        sets the session up (`_begin_with`)."""
        if not self._begun and not before:
            return self._begin_with(statement, setup)
        self._ensure_begun()
        conn = self._live()
        self._lines = []
        if before:
            self._spare = None  # `before` may roll back past the spare: the statement gets a savepoint after it
        savepoint, opened = self._savepoint_for_statement()
        spare = self._new_savepoint() if setup else None
        try:
            with self._guard("running a statement"), self._watched(conn):
                # Never in the statement's round trip: the server parses a whole query string before running
                # any of it, so a syntax error in the statement would then leave no savepoint to roll back to.
                if not opened:
                    conn.execute(f"{before}SAVEPOINT {savepoint}")
                # No parameters: simple protocol, several statements allowed. The newline ends a last `--` comment.
                conn.execute(f"{statement}\n; SAVEPOINT {spare}" if spare else statement)
        except EngineUnavailable:
            if self._killed:
                return self._killed_result()
            raise
        except psycopg.Error as exc:
            return self._failed(exc, savepoint)
        ran = self._ran(conn, savepoint)
        self._spare = self._spare or spare
        return ran

    def execute_own(self, text: str) -> tuple[ExecResult, QueryResult | None]:
        """The harness's own statements in one round trip, with the rows of the last one.

        Only for the harness's own text that is known to parse (calls of an installed procedure, state reads):
        the savepoint shares the round trip, and a string that does not parse runs none of it, not even the
        savepoint (see `execute`); a candidate's text could also leave a comment or a string open and swallow
        what follows it. When a statement fails, all of them are undone and the error is the result's; the
        rows are then None. Text that does not parse is a harness error (RuntimeError): the transaction,
        and all it held, is gone.
        """
        self._ensure_begun()
        conn = self._live()
        self._lines = []
        savepoint, opened = self._savepoint_for_statement()
        try:
            with self._guard("running the harness's statements"), self._watched(conn):
                cur = conn.execute(text if opened else f"SAVEPOINT {savepoint}; {text}")
                while cur.nextset():
                    pass
                read = pg_wire.query_result(cur)
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
        return self._ran(conn, savepoint), read

    def execute_first(self, text: str) -> ExecResult:
        """The harness's own statements (known to parse) at the top level of the transaction, when no
        statement ran yet (else in a savepoint, as `execute_own` runs them). What they write then belongs to
        the transaction itself: PostgreSQL tells whether a row is this transaction's own by walking the open
        subtransactions from the innermost, so rows written under a savepoint cost every later read of them a
        walk (a workspace's copy is read after every call; bench/procedural_ile_sample.py: ILE 25.0 -> 22.8 s).
        On an error the transaction begins again, so nothing of the text is left."""
        self._ensure_begun()
        if self._statements != 1 or self._spare is None:
            return self.execute_own(text)[0]
        conn, spare = self._live(), self._spare
        self._lines = []
        try:
            with self._guard("preparing the session"), self._watched(conn):
                conn.execute(f"RELEASE SAVEPOINT {spare}; {text}; SAVEPOINT {spare}")
        except EngineUnavailable:
            if self._killed:
                return self._killed_result()
            raise
        except psycopg.Error as exc:
            with self._guard("beginning the session again"):
                conn.rollback()
                self.begin()
            timed_out = isinstance(exc, psycopg.errors.QueryCanceled)
            return ExecResult(lines=self._lines, error=pg_wire.diagnostic(exc), timed_out=timed_out)
        return self._ran(conn, spare)

    def _new_savepoint(self) -> str:
        # A fresh savepoint per statement, never released: a session runs a handful of
        # statements, and skipping RELEASE saves a round trip on every one of them.
        self._statements += 1
        return f"{_SAVEPOINT}_{self._statements}"

    def _savepoint_for_statement(self) -> tuple[str, bool]:
        """The savepoint the next statement runs under, and whether it is open already (the spare)."""
        spare, self._spare = self._spare, None
        self._unchecked = True
        return (spare, True) if spare else (self._new_savepoint(), False)

    def _ran(self, conn: psycopg.Connection, savepoint: str) -> ExecResult:
        lines, self._lines = self._lines, []  # re-setting the session below must not add its notices
        if conn.info.transaction_status == TransactionStatus.IDLE:
            self._settle(savepoint)  # the statement ran COMMIT or ROLLBACK itself
        return ExecResult(lines=lines)

    def _killed_result(self) -> ExecResult:
        lines, self._lines = self._lines, []
        return ExecResult(lines=lines, error=pg_wire.KILLED, timed_out=True)

    def query(self, statement: str) -> QueryResult:
        """Rows of one query (with column names and type names), or its diagnostic."""
        self._ensure_begun()
        conn = self._live()
        savepoint, opened = self._savepoint_for_statement()
        try:
            with self._guard("running a query"), self._watched(conn):
                if not opened:
                    conn.execute(f"SAVEPOINT {savepoint}")
                read = pg_wire.query_result(conn.execute(statement))
        except EngineUnavailable:
            if self._killed:
                killed = self._killed_result()
                return QueryResult(error=killed.error, timed_out=True)
            raise
        except psycopg.Error as exc:
            failed = self._failed(exc, savepoint)
            return QueryResult(error=failed.error, timed_out=failed.timed_out)
        return read

    # ---- the grading channel ---------------------------------------------------------------

    def call_all(
        self, function: str, argument_lists: list[list[str]], budget_s: float | None = None, last: bool = False
    ) -> list:
        """`to_jsonb(<schema>.<function>(<arguments>))` per argument list, one CallOutcome each.

        The calls share one budget (default: the statement timeout), as the cases of one test block
        did. They go in one round trip; when one raises, they are run again one at a time, each in a
        savepoint, so every call gets its own outcome. A call still running when the budget is spent
        is a timeout, and so is every call after it. The harness's timeout and search_path are set
        again first, whatever the candidate's statements set, and the transaction is checked to
        still be the session's own. `last`: nothing runs in the session after the calls, so when they
        all return, the same round trip ends the session (what `finish` would send).
        """
        self._ensure_begun()
        budget = self._timeout_ms / 1000 if budget_s is None else budget_s
        target = f"{self._quoted}.{function}"
        calls = [f"SELECT pg_catalog.to_jsonb({target}({', '.join(args)}))" for args in argument_lists]
        start = time.monotonic()
        batch = self._calls(calls, budget, last)
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

    def _calls(self, calls: list[str], budget_s: float, last: bool) -> list[CallOutcome] | None:
        """All calls in one round trip (ending the session too when `last`); None when one failed (the
        caller runs them one by one, and the session goes on)."""
        conn = self._live()
        self._spare = None
        head = f"SAVEPOINT {_CALLS}; {self._settings(max(1, round(budget_s * 1000)))}; "
        text = head + "SELECT pg_catalog.pg_current_xact_id_if_assigned()::text; " + "; ".join(calls)
        if last:
            text += "; " + pg_wire.ROLLBACK_AND_DISCARD
        self._lines = []
        try:
            with self._guard("calling the candidate"), self._watched(conn, budget_s):
                cur = conn.execute(text)
                # The transaction id, then a value a call: the session's end after them is left unread (psycopg
                # raised above had any statement of the string failed).
                wanted, results = 1 + len(calls), []
                while True:
                    if cur.pgresult.status == pq.ExecStatus.TUPLES_OK:  # a row, not a command's status
                        results.append(cur.fetchone()[0])
                    if len(results) == wanted or not cur.nextset():
                        break
        except EngineUnavailable:
            if self._killed:
                return [CallOutcome(timed_out=True, error=self._killed_result().error) for _ in calls]
            raise
        except psycopg.Error as exc:
            timed_out = isinstance(exc, psycopg.errors.QueryCanceled)
            self._settle(_CALLS)
            if timed_out:
                return [CallOutcome(timed_out=True, error=pg_wire.diagnostic(exc)) for _ in calls]
            return None
        self._check_transaction(results[0])
        self._ended = last
        return [CallOutcome(value=v) for v in results[1:]]

    def _one_call(self, call: str, budget_s: float) -> CallOutcome:
        conn = self._live()
        self._spare = None
        settings = self._settings(max(1, round(budget_s * 1000)))
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
            self._settle(_CALLS)
            return CallOutcome(error=pg_wire.diagnostic(exc), timed_out=isinstance(exc, psycopg.errors.QueryCanceled))
        return CallOutcome(value=value)

    # ---- after a statement -----------------------------------------------------------------

    def _failed(self, exc: psycopg.Error, savepoint: str) -> ExecResult:
        lines, self._lines = self._lines, []  # notices raised before the error are part of the output
        with self._guard("ending a COPY"):
            pg_wire.finish_copy(self._live())
        self._settle(savepoint)
        timed_out = isinstance(exc, psycopg.errors.QueryCanceled)
        return ExecResult(lines=lines, error=pg_wire.diagnostic(exc), timed_out=timed_out)

    def _settle(self, savepoint: str) -> None:
        """Get back inside our transaction after a statement, undone to `savepoint` when it is still
        open (it is then the next statement's spare)."""
        conn = self._live()
        with self._guard("cleaning up after a statement"):
            if conn.info.transaction_status == TransactionStatus.IDLE:
                # The statement ran COMMIT/ROLLBACK: the SET LOCALs are gone and what it
                # committed is permanent. Restore the environment; drop the schema at the end.
                self.escaped = True
                self.begin()
                return
            try:
                conn.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
                self._spare = savepoint
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
            if self._begun and not self._ended:
                # One round trip: is the transaction still ours, then end it and clear the session.
                xid = conn.execute(
                    "SELECT pg_catalog.pg_current_xact_id_if_assigned()::text; " + pg_wire.ROLLBACK_AND_DISCARD
                ).fetchone()[0]
                if self._unchecked:
                    self._check_transaction(xid)
            conn.autocommit = False
            # Something was committed: the engine drops our schema as its administrator; do not
            # reuse a connection whose session settings or temporary objects may be committed too.
            return not self.escaped
        except psycopg.Error:
            return False
