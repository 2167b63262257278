"""What a PostgreSQL session (plbench.engines.pg_session) sends and reads beneath psycopg's cursor: the
statements that clear a connection for reuse, the results of a query string read one by one, the errors
a cursor would raise for them, and the end of a COPY psycopg leaves half done."""

from __future__ import annotations

import psycopg
from psycopg import generators, pq
from psycopg.pq import TransactionStatus

from plbench.engines.base import Diagnostic, EngineUnavailable, QueryResult

# Ends the session's transaction, then clears what a rollback does not (PREPAREd statements, session
# advisory locks, cached plans, ...): DISCARD ALL spelled out as its documented parts.
ROLLBACK_AND_DISCARD = (
    "ROLLBACK; CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; DEALLOCATE ALL; UNLISTEN *; "
    "SELECT pg_catalog.pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES"
)
# What a cursor takes as a statement that ran (psycopg's _check_results); any other result is an error.
# A statement the watchdog ended with its backend (plbench.engines.watchdog).
KILLED = Diagnostic("57014", "still running after the timeout and a cancel: its backend was ended")
RAN = frozenset({pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK, pq.ExecStatus.EMPTY_QUERY, pq.ExecStatus.COPY_BOTH})


class SessionSetupError(RuntimeError):
    """The harness's own statements that set a session up failed: no candidate's doing."""

    def __init__(self, exc: psycopg.Error):
        super().__init__(
            f"cannot set up a PostgreSQL session: {exc} (the role needs the CREATE privilege on the database)"
        )


def diagnostic(exc: psycopg.Error) -> Diagnostic:
    # Errors raised by psycopg itself (no SQLSTATE) are things this engine does not
    # support, e.g. COPY to/from the client: report them as feature_not_supported.
    return Diagnostic(code=exc.sqlstate or "0A000", message=exc.diag.message_primary or str(exc))


def lost(doing: str, exc: psycopg.Error) -> EngineUnavailable:
    return EngineUnavailable(
        f"lost the PostgreSQL connection while {doing} ({exc.sqlstate or 'no SQLSTATE'}: "
        f"{str(exc).strip()}); the server was stopped, restarted or ended this backend"
    )


def results(conn: psycopg.Connection, text: str) -> list[pq.PGresult]:
    """The result of every statement of a query string that ran, up to and with the one that failed: a cursor
    raises at the failing one and keeps none of those before it."""
    with conn.lock:
        conn.pgconn.send_query(text.encode(conn.info.encoding))
        return conn.wait(generators.fetch_many(conn.pgconn))


def error_of(result: pq.PGresult, conn: psycopg.Connection) -> psycopg.Error:
    """The error a cursor raises for a result that is not a statement that ran."""
    if result.status in (pq.ExecStatus.COPY_IN, pq.ExecStatus.COPY_OUT):
        return psycopg.ProgrammingError("COPY cannot be used with this method; use copy() instead")
    return psycopg.errors.error_from_result(result, encoding=conn.info.encoding)


def query_result(cur: psycopg.Cursor) -> QueryResult:
    """The rows of a cursor's current result, with the columns' names and their types' names."""
    description = cur.description or ()
    types = [_type_name(cur.connection, d.type_code) for d in description]
    return QueryResult([d.name for d in description], types, cur.fetchall() if description else [])


def _type_name(conn: psycopg.Connection, oid: int) -> str:
    info = conn.adapters.types.get(oid)
    return info.name if info else str(oid)


def finish_copy(conn: psycopg.Connection) -> None:
    """psycopg refuses COPY in execute() and leaves the protocol mid-COPY: end it. COPY FROM STDIN is
    aborted, COPY TO STDOUT drained, so the connection is usable again."""
    if conn.info.transaction_status != TransactionStatus.ACTIVE:
        return
    pgconn = conn.pgconn
    while (res := pgconn.get_result()) is not None:
        if res.status == pq.ExecStatus.COPY_OUT:
            while pgconn.get_copy_data(0)[0] >= 0:
                pass
        elif res.status == pq.ExecStatus.COPY_IN:
            pgconn.put_copy_end(b"COPY FROM STDIN is not supported by plbench")
