"""Oracle engine: run PL/SQL candidates through python-oracledb in thin mode.

Oracle commits DDL implicitly, so a session cannot be a rolled-back transaction.
Instead a session records the user's objects (USER_OBJECTS) when it starts and
drops every object that appeared by the time it ends. All sessions share the
one schema of the configured user, so they run one at a time (a lock): two
concurrent sessions would clash on object names and drop each other's objects.
Objects that existed before the session and were replaced (CREATE OR REPLACE)
cannot be restored; give the engine an empty schema.

Output is DBMS_OUTPUT, fetched after every statement. A CREATE of a PL/SQL unit
or type that does not compile "succeeds with compilation errors"; the first
error is read from USER_ERRORS and reported as the statement's error.

Connecting is bounded by a timeout: a server that accepts TCP and never answers
would otherwise hang the thin-mode connect forever.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import oracledb

from plbench.engines.base import CallOutcome, Diagnostic, EngineUnavailable, ExecResult, QueryResult

_OUTPUT_CHUNK = 100  # DBMS_OUTPUT lines fetched per round trip
_MAX_LINE = 32767  # longest DBMS_OUTPUT line
_TIMEOUT_CODES = {"DPY-4024", "DPI-1067", "ORA-01013"}  # call timeout (thin, thick), cancelled call
_LOST_CODES = {"DPY-4011", "DPY-1001"}  # connection closed, not connected

# Drop order: dependents first. Dropping a table drops its indexes, LOBs and triggers.
_DROP_SQL = {
    "TRIGGER": "DROP TRIGGER {}",
    "VIEW": "DROP VIEW {}",
    "PACKAGE": "DROP PACKAGE {}",
    "PROCEDURE": "DROP PROCEDURE {}",
    "FUNCTION": "DROP FUNCTION {}",
    "SYNONYM": "DROP SYNONYM {}",
    "SEQUENCE": "DROP SEQUENCE {}",
    "TABLE": "DROP TABLE {} CASCADE CONSTRAINTS PURGE",
    "TYPE": "DROP TYPE {} FORCE",
}

_CODE_PATTERNS = (
    re.compile(r"\bPLS-\d{5}\b"),
    re.compile(r"\bORA-\d{5}\b"),
    re.compile(r"\b(?:DPY|DPI)-\d{4}\b"),
)

_CREATE_UNIT = re.compile(
    r"""^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?
    (?P<kind>PACKAGE\s+BODY|TYPE\s+BODY|PACKAGE|TYPE|FUNCTION|PROCEDURE|TRIGGER)\s+
    (?:IF\s+NOT\s+EXISTS\s+)?
    (?:(?:"[^"]+"|[\w$#]+)\s*\.\s*)?
    (?P<name>"[^"]+"|[\w$#]+)""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True)
class OracleDsn:
    """A parsed `user/password@host:port/service_name` (credentials optional)."""

    user: str | None
    password: str | None = field(repr=False)  # kept out of logs and tracebacks
    host: str
    port: int
    service_name: str
    address: str  # the EZConnect part as given, handed to python-oracledb unchanged


def parse_dsn(dsn: str) -> OracleDsn:
    """Parse `[user/password@][//]host[:port]/service_name[?params]`; ValueError if malformed."""
    credentials, at, address = dsn.strip().rpartition("@")  # the password may contain '@'
    user = password = None
    if at:
        user, slash, password = credentials.partition("/")
        if not slash or not user:
            raise ValueError("credentials must be written user/password@...")
    match = re.fullmatch(r"(?://)?(\[[^\]]+\]|[^:/\[\]]+)(?::(\d+))?/([^/?:]+)(?:[:/?].*)?", address.strip())
    if match is None:
        raise ValueError(f"expected host:port/service_name, got {address!r}")
    host, port, service = match.groups()
    return OracleDsn(user, password, host.strip("[]"), int(port or 1521), service, address.strip())


def error_code(message: str) -> str:
    """The code that names an Oracle error: the first PLS- code, else ORA-, else DPY-/DPI-."""
    for pattern in _CODE_PATTERNS:
        if found := pattern.search(message):
            return found.group(0)
    return ""


def created_unit(statement: str) -> tuple[str, str] | None:
    """(USER_ERRORS type, name) of the PL/SQL unit or type a CREATE statement makes, else None."""
    match = _CREATE_UNIT.match(statement)
    if match is None:
        return None
    name = match["name"]
    name = name[1:-1] if name.startswith('"') else name.upper()
    return " ".join(match["kind"].upper().split()), name


_PLSQL_BLOCK = re.compile(r"^\s*(?:BEGIN|DECLARE)\b", re.IGNORECASE)


def strip_terminator(statement: str) -> str:
    """The statement as the server takes it: SQL*Plus ends PL/SQL units with a lone "/" line, which the
    server does not accept, and a SQL statement's closing ";" (the normalized DDL and data scripts end
    every statement so) fails it; a PL/SQL block or unit keeps its ";", which ends its last END."""
    text = re.sub(r"(?:^|\n)\s*/\s*$", "", statement.strip())
    if text.endswith(";") and not _PLSQL_BLOCK.match(text) and created_unit(text) is None:
        return text[:-1].rstrip()
    return text


def _connect_bounded(target: OracleDsn, timeout_s: float) -> oracledb.Connection:
    """oracledb.connect in a daemon thread, given up after `timeout_s`.

    A thread that is given up stays blocked until the server closes the socket; a
    connection it still manages to open is closed at once.
    """
    # Fix thin mode now: until the mode is decided, a connect holds a process-wide lock,
    # so one hung connect would block every later connect in the process.
    oracledb.enable_thin_mode()
    outcome: dict[str, object] = {}
    lock = threading.Lock()

    def attempt() -> None:
        try:
            conn = oracledb.connect(
                user=target.user, password=target.password, dsn=target.address, tcp_connect_timeout=timeout_s
            )
        except BaseException as exc:  # handed to the waiting thread
            with lock:
                outcome["error"] = exc
            return
        with lock:
            if "abandoned" not in outcome:
                outcome["conn"] = conn
                return
        with contextlib.suppress(oracledb.Error):
            conn.close()

    thread = threading.Thread(target=attempt, name="plbench-oracle-connect", daemon=True)
    thread.start()
    thread.join(timeout_s)
    with lock:
        if "conn" in outcome:
            return outcome["conn"]
        if "error" in outcome:
            raise _connect_failed(target, outcome["error"])
        outcome["abandoned"] = True
    raise EngineUnavailable(f"Oracle at {target.host}:{target.port} did not answer within {timeout_s:g} s")


def _connect_failed(target: OracleDsn, exc: object) -> EngineUnavailable:
    text = " ".join(str(exc).split())
    # Prefer the server's ORA code (e.g. ORA-01017 bad credentials) to the driver's DPY wrapper.
    ora = _CODE_PATTERNS[1].search(text)
    code = ora.group(0) if ora else error_code(text)
    return EngineUnavailable(
        f"cannot connect to Oracle at {target.host}:{target.port}/{target.service_name} "
        f"({code or 'error'}): {text}; check PLBENCH_ORACLE_DSN"
    )


def _driver_code(exc: oracledb.Error) -> str:
    """The driver's own code for an error (DPY-4024, DPY-4011, ORA-00942...)."""
    err = exc.args[0] if exc.args else None
    return err.full_code if isinstance(err, oracledb._Error) else ""


def _session_dead(exc: oracledb.Error) -> bool:
    err = exc.args[0] if exc.args else None
    return bool(getattr(err, "is_session_dead", False)) or _driver_code(exc) in _LOST_CODES


class OracleSession:
    """Runs statements on the engine's connection; drops what it created when it ends."""

    def __init__(self, engine: OracleEngine):
        self._engine = engine
        self._before = self._objects()
        self._enable_output()

    def _conn(self) -> oracledb.Connection:
        return self._engine._connection()

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """Turn a lost connection into EngineUnavailable; other errors pass through."""
        try:
            yield
        except oracledb.Error as exc:
            if _session_dead(exc) or not self._engine._healthy():
                self._engine._drop_connection()
                message = str(exc).strip()
                raise EngineUnavailable(f"lost the Oracle connection while {doing}: {message}") from exc
            raise

    def _enable_output(self) -> None:
        with self._guard("enabling DBMS_OUTPUT"), self._conn().cursor() as cursor:
            cursor.callproc("dbms_output.enable", [None])  # NULL: unlimited buffer

    def _objects(self) -> set[tuple[str, str]]:
        with self._guard("listing USER_OBJECTS"), self._conn().cursor() as cursor:
            cursor.execute("SELECT object_name, object_type FROM user_objects")
            return set(cursor.fetchall())

    def execute(self, statement: str, setup: bool = False) -> ExecResult:
        """Run one statement; `setup` changes nothing here (no savepoint to open: see PostgresSession.execute)."""
        with self._guard("running a statement"):
            with self._conn().cursor() as cursor:
                try:
                    cursor.execute(strip_terminator(statement))
                except oracledb.Error as exc:
                    return self._failed(exc)
                warning = cursor.warning
            lines = self._output()
            error = self._compile_error(statement, warning) if warning is not None else None
        return ExecResult(lines=lines, error=error)

    def query(self, statement: str) -> QueryResult:
        """Rows of one query (LOBs read into str/bytes), with column and type names, or its diagnostic."""
        with self._guard("running a query"), self._conn().cursor() as cursor:
            try:
                cursor.execute(strip_terminator(statement))
                rows = [tuple(v.read() if isinstance(v, oracledb.LOB) else v for v in row) for row in cursor.fetchall()]
            except oracledb.Error as exc:
                failed = self._failed(exc)
                return QueryResult(error=failed.error, timed_out=failed.timed_out)
            description = cursor.description or ()
        return QueryResult([d.name for d in description], [d.type_code.name for d in description], rows)

    def call_all(
        self, function: str, argument_lists: list[list[str]], budget_s: float | None = None, last: bool = False
    ) -> list:
        """`SELECT "<USER>".<function>(<arguments>) FROM SYS.DUAL` per argument list, from the client.

        The grading channel (see plbench.grading): DBMS_OUTPUT is not read, the expected values never
        reach the server, and the value comes back as the driver fetches it, object and collection
        types as plain dicts and lists. The calls share one budget, enforced by the driver's call
        timeout, which PL/SQL cannot catch; a call past it is a timeout, and so is every later one.
        The session ends as usual whatever `last` says (one call a round trip: nothing to save).
        Untested here: no Oracle server.
        """
        conn = self._conn()
        budget_ms = self._engine._call_timeout_ms if budget_s is None else max(1, round(budget_s * 1000))
        user = conn.username.upper().replace('"', "")
        deadline = time.monotonic() + budget_ms / 1000
        outcomes: list[CallOutcome] = []
        try:
            for args in argument_lists:
                left_ms = round((deadline - time.monotonic()) * 1000)
                if left_ms <= 0 or (outcomes and outcomes[-1].timed_out):
                    outcomes.append(
                        CallOutcome(timed_out=True, error=Diagnostic("DPY-4024", "the time budget was spent"))
                    )
                    continue
                self._conn().call_timeout = left_ms
                outcomes.append(self._call(f'SELECT "{user}".{function}({", ".join(args)}) FROM SYS.DUAL'))
        finally:
            if self._engine._healthy():
                self._conn().call_timeout = self._engine._call_timeout_ms
        return outcomes

    def _call(self, statement: str) -> CallOutcome:
        with self._guard("calling the candidate"), self._conn().cursor() as cursor:
            try:
                cursor.execute(statement)
                return CallOutcome(value=_plain(cursor.fetchone()[0]))
            except oracledb.Error as exc:
                failed = self._failed(exc)
                return CallOutcome(error=failed.error, timed_out=failed.timed_out)

    def _failed(self, exc: oracledb.Error) -> ExecResult:
        message = str(exc).strip()
        diagnostic = Diagnostic(error_code(message) or _driver_code(exc), message)
        timed_out = _driver_code(exc) in _TIMEOUT_CODES or diagnostic.code in _TIMEOUT_CODES
        if timed_out and not self._engine._healthy():
            # A call timeout can leave the connection unusable. That is still the statement's
            # failure, not the server's: the next call reconnects.
            self._engine._drop_connection()
            return ExecResult(error=diagnostic, timed_out=True)
        if _session_dead(exc) or not self._engine._healthy():
            raise exc  # _guard reports the lost connection
        return ExecResult(lines=self._output(), error=diagnostic, timed_out=timed_out)

    def _output(self) -> list[str]:
        lines: list[str] = []
        with self._conn().cursor() as cursor:
            lines_var = cursor.arrayvar(str, _OUTPUT_CHUNK, _MAX_LINE)
            count_var = cursor.var(int)
            while True:
                count_var.setvalue(0, _OUTPUT_CHUNK)
                cursor.callproc("dbms_output.get_lines", [lines_var, count_var])
                count = count_var.getvalue()
                lines.extend(line or "" for line in lines_var.getvalue()[:count])
                if count < _OUTPUT_CHUNK:
                    return lines

    def _compile_error(self, statement: str, warning: oracledb._Error) -> Diagnostic | None:
        unit = created_unit(strip_terminator(statement))
        if unit is None:
            return Diagnostic(warning.full_code, warning.message)
        with self._conn().cursor() as cursor:  # inside execute's _guard
            cursor.execute(
                "SELECT attribute, line, position, text FROM user_errors"
                " WHERE type = :kind AND name = :name ORDER BY sequence",
                kind=unit[0],
                name=unit[1],
            )
            rows = cursor.fetchall()
        errors = [row for row in rows if row[0] == "ERROR"]
        if not errors:
            # Only compiler warnings (PLW-) were recorded: the unit compiled.
            return None if rows else Diagnostic(warning.full_code, warning.message)
        # The first PLS- error names the problem; "PL/SQL: Statement ignored" rows carry no code.
        _, line, position, text = next((row for row in errors if "PLS-" in row[3]), errors[0])
        message = f"line {line}, column {position}: {text.strip()}"
        return Diagnostic(error_code(text) or warning.full_code, message)

    def finish(self) -> None:
        """Roll back, then drop every object created since the session started."""
        with self._guard("rolling back"):
            self._conn().rollback()
        created = self._objects() - self._before
        with self._guard("dropping the session's objects"), self._conn().cursor() as cursor:
            for kind, drop_sql in _DROP_SQL.items():
                for name in sorted(name for name, obj_kind in created if obj_kind == kind):
                    _drop_quietly(cursor, drop_sql.format(f'"{name}"'))


def _plain(value):
    """A fetched value as plain data: objects as {attribute (lower case): value}, collections as lists."""
    if isinstance(value, oracledb.LOB):
        return value.read()
    if isinstance(value, oracledb.DbObject):
        if value.type.iscollection:
            return [_plain(v) for v in value.aslist()]
        return {a.name.lower(): _plain(getattr(value, a.name)) for a in value.type.attributes}
    return value


def _drop_quietly(cursor: oracledb.Cursor, statement: str) -> None:
    try:
        cursor.execute(statement)
    except oracledb.DatabaseError as exc:
        # Already gone (dropped with its table or type) or made by the system: ignore,
        # but a lost connection must reach the session's guard.
        if _session_dead(exc):
            raise


class OracleEngine:
    """Hands out Oracle sessions one at a time on a single thin-mode connection."""

    dialect = "oracle"
    # Every session loads the database a task needs into its own objects, and drops them when it ends: no
    # database stays loaded (`loaded`), so a procedure task is graded on a copy made from the normalized files.
    copies_databases = True

    def __init__(self, target: OracleDsn, connect_timeout_s: float = 10.0, statement_timeout_s: float = 10.0):
        self._target = target
        self._connect_timeout_s = connect_timeout_s
        self.statement_timeout_s = statement_timeout_s
        self._call_timeout_ms = max(1, round(statement_timeout_s * 1000))
        self._conn: oracledb.Connection | None = None
        self._session_lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        dsn: str,
        connect_timeout_s: float = 10.0,
        statement_timeout_s: float = 10.0,
        *,
        user: str | None = None,
        password: str | None = None,
    ) -> OracleEngine:
        """Connect to `user/password@host:port/service_name`, or to an EZConnect `dsn` with `user`."""
        try:
            target = parse_dsn(dsn)
        except ValueError as exc:
            raise EngineUnavailable(f"bad Oracle DSN: {exc} (user/password@host:port/service)") from exc
        if user is not None:
            target = replace(target, user=user, password=password)
        if not target.user:
            raise EngineUnavailable("no Oracle user: write the DSN as user/password@host:port/service")
        engine = cls(target, connect_timeout_s, statement_timeout_s)
        engine._connection()
        return engine

    def version(self) -> str:
        parts = self._connection().version.split(".")  # "23.4.0.24.5"
        return "Oracle " + ".".join(parts[:2])

    @contextlib.contextmanager
    def session(self) -> Iterator[OracleSession]:
        with self._session_lock:
            sess = OracleSession(self)
            try:
                yield sess
            finally:
                sess.finish()

    def loaded(self, schema: str | None) -> bool:
        """Block tasks read a loaded database; here databases are loaded into a session's own objects and
        dropped with it (plbench.spider.stages), so none is loaded for grading."""
        return False

    def reachable(self) -> bool:
        try:
            self._connection()
            return True
        except EngineUnavailable:
            return False

    def close(self) -> None:
        self._drop_connection()

    def __enter__(self) -> OracleEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _connection(self) -> oracledb.Connection:
        """The live connection, reconnecting (bounded) when it was lost or dropped."""
        if self._conn is None or not self._conn.is_healthy():
            self._drop_connection()
            conn = _connect_bounded(self._target, self._connect_timeout_s)
            conn.call_timeout = self._call_timeout_ms
            try:
                # Also here, not only at session start: a session may continue on a new
                # connection after a call timeout broke the old one.
                with conn.cursor() as cursor:
                    cursor.callproc("dbms_output.enable", [None])
            except oracledb.Error as exc:
                with contextlib.suppress(oracledb.Error):
                    conn.close()
                raise EngineUnavailable(f"Oracle connection set-up failed: {str(exc).strip()}") from exc
            self._conn = conn
        return self._conn

    def _healthy(self) -> bool:
        return self._conn is not None and self._conn.is_healthy()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(oracledb.Error):
                conn.close()
