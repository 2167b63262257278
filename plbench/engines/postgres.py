"""PostgreSQL engine: run PL/pgSQL candidates in throw-away, rolled-back sessions.

A session (plbench.engines.pg_session) is one transaction on its own connection, in a private
schema, rolled back when it ends. A session a statement escaped (it committed) is swept as the
configured user afterwards: its schema dropped, the candidate role's settings and password reset.
A statement still running past its timeout is cancelled, then its backend ended
(plbench.engines.watchdog).

The server is either the one named by a DSN, or a private embedded server
started with `pgserver` in a cache folder. The embedded server is deliberately
left running when the process exits (cleanup_mode=None) so later processes
reuse it instead of paying initdb and startup again; `close()` only closes
connections. When the process runs as root, pgserver creates a system user
`pgserver` (useradd), runs the server as that user, chowns the data folder to
it and adds o+rx to every parent folder of the data folder.

Sessions do not run as the configured user (a superuser for the embedded server),
since a statement may end the transaction itself (`...; COMMIT`) and what it did
then is permanent. They log in as the role `plbench_candidate`, created on first
use when the configured user may create roles: no superuser, CREATE on the
database (for the private schemas), only USAGE and SELECT on loaded databases'
schemas (`session(reads=...)`; default privileges cover schemas loaded later). So
a candidate cannot drop, alter or write a loaded database, committed or not, nor
reach the server's files or programs. When the role cannot be set up (no
CREATEROLE, or pg_hba refuses it), sessions fall back to the configured user with
a warning, and `candidate_role` is None.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import subprocess
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from plbench.engines.base import EngineUnavailable
from plbench.engines.pg_session import PostgresSession
from plbench.engines.watchdog import Watchdog

_POOL_MAX = 4  # idle connections kept; more concurrent sessions just open extra ones
# A backend keeps what every candidate it ran compiled (PL/pgSQL keeps the functions and their cached plans
# after the rollback dropped them), and DISCARD PLANS and each rollback's invalidations walk all of it: a
# session cost 1.2 ms of server CPU on a fresh backend and 9 ms after 2,400 sessions. A connection is closed
# after this many checkouts; opening one costs about as much as 100 sessions on a fresh backend.
_CHECKOUTS_MAX = 100
# Statements compile too (a procedure or function each installs stays compiled after its rollback), and one
# session may run hundreds (the gate's, over a database copy; ILE's, over its seeds): a connection is also
# closed once its sessions opened this many savepoints (one per statement) in all. On the release gate's
# procedure tasks, in sessions of about 300 savepoints each, the gate's server CPU went from 108 to 63 s
# with this limit (bench/gate_time.py --baseline); timed with one worker, a ROLLBACK TO SAVEPOINT there
# took 2.3 ms before it and 0.7 ms with it.
_CONNECTION_SAVEPOINTS_MAX = 500
_CONNECT_TIMEOUT_S = 10
_RECOVERY_WAIT_S = 300  # a build's data dir replayed 270 MB of WAL in 10.1 s after an unclean stop
CANDIDATE_ROLE = "plbench_candidate"
# Held while the role is set up, granted reads or reset: two transactions altering it at once fail with
# "tuple concurrently updated", whether in two threads or two processes.
_ROLE_LOCK = "SELECT pg_advisory_xact_lock(hashtext('plbench_candidate_role'))"
# statement_timeout is the candidate's to change (`SET statement_timeout = 0`), so a watchdog cancels
# any statement still running this long after its timeout, and ends its backend as long again later.
_WATCHDOG_GRACE_S = 1.0


def _next_schema_name() -> str:
    # Unguessable, not counted: a candidate that commits can create a schema that outlives its session, and a
    # later session named like it would run inside it (CREATE SCHEMA IF NOT EXISTS), among the candidate's
    # functions and operators, which its search_path puts before pg_catalog. Random names are also unique
    # across the processes sharing one server (two open transactions creating one name would block each other).
    return f"plb_s_{secrets.token_hex(8)}"


def _describe(dsn: str) -> str:
    """The DSN without its password, for error messages."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the configured server"
    host = parts.get("host") or "localhost"
    return f"{parts.get('user') or ''}@{host}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


_server_start = threading.Lock()  # steps on threads (pipelines/step_threads.py) open engines at the same time


def _start_pgserver(data_dir: Path):
    with _server_start:  # pgserver's lock file keeps other processes out, not other threads of this one
        return _get_pgserver(data_dir)


def _get_pgserver(data_dir: Path):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns on import when XDG_RUNTIME_DIR is unset
            import pgserver
    except ImportError as exc:
        raise EngineUnavailable(
            "pgserver is not installed: install it, or set PLBENCH_PG_DSN to an existing PostgreSQL"
        ) from exc
    try:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        # Reuses a server already running on this data dir (also from another process).
        return pgserver.get_server(str(data_dir), cleanup_mode=None)
    except subprocess.TimeoutExpired as exc:
        # pgserver gives the server 10 s to start. One that stopped uncleanly (a killed machine or process)
        # replays its WAL first, which on a build's data dir takes longer, and it goes on starting: wait for
        # it, then reuse it.
        if not wait_until_ready(data_dir, _RECOVERY_WAIT_S):
            raise EngineUnavailable(_start_failed(data_dir, exc)) from exc
        return pgserver.get_server(str(data_dir), cleanup_mode=None)
    except Exception as exc:  # pgserver raises CalledProcessError, OSError, AssertionError...
        raise EngineUnavailable(_start_failed(data_dir, exc)) from exc


def _start_failed(data_dir: Path, exc: Exception) -> str:
    return (
        f"could not start the embedded PostgreSQL (pgserver) in {data_dir}: {exc!r}; "
        f"see {data_dir / 'log'}, or set PLBENCH_PG_DSN to an existing PostgreSQL"
    )


def wait_until_ready(data_dir: Path, seconds: float) -> bool:
    """Whether the server of `data_dir` is ready within `seconds`: False at once when none is running (no
    postmaster.pid, or its process is gone), as a server that gave up starting leaves it."""
    from pgserver.utils import PostmasterInfo

    deadline = time.monotonic() + seconds
    while True:
        info = PostmasterInfo.read_from_pgdata(data_dir)
        if info is None or not info.is_running():
            return False
        if info.status == "ready":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


class PostgresEngine:
    """Hands out isolated PostgreSQL sessions; thread-safe (one connection per session)."""

    dialect = "postgres"
    copies_databases = False  # procedure tasks copy a loaded database inside a session (`loaded`)

    def __init__(self, dsn: str, statement_timeout_s: float = 10.0, server: object | None = None):
        self._dsn = dsn
        self.statement_timeout_s = statement_timeout_s
        self._timeout_ms = max(1, round(statement_timeout_s * 1000))
        self._server = server  # the pgserver handle, kept so its bookkeeping lives as long as we do
        self._idle: list[psycopg.Connection] = []
        # (checkouts, savepoints) so far of each connection; one closed and dropped leaves with its entry.
        self._used: weakref.WeakKeyDictionary[psycopg.Connection, tuple[int, int]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._closed = False
        self._version: str | None = None
        self._setup_lock = threading.Lock()
        self._session_dsn: str | None = None  # the candidate role's conninfo, once set up
        self.candidate_role: str | None = None  # None: sessions run as the configured user
        self._granted: set[str] = set()  # loaded schemas the candidate role may read
        self._candidate_password = ""
        self._loaded: set[str] = set()
        self._watchdog = Watchdog(self._terminate_backend, _WATCHDOG_GRACE_S)

    @classmethod
    def start(cls, dsn: str | None, data_dir: Path, statement_timeout_s: float = 10.0) -> PostgresEngine:
        """Connect to `dsn`, or without one start (or reuse) an embedded server in `data_dir`."""
        server = None
        if not dsn:
            server = _start_pgserver(Path(data_dir))
            dsn = server.get_uri()
        engine = cls(dsn, statement_timeout_s, server)
        engine.version()  # connect now, so a bad configuration fails here and not mid-run
        return engine

    def version(self) -> str:
        if self._version is None:
            conn = self._acquire()
            try:
                raw = conn.execute("SHOW server_version").fetchone()[0]
                conn.rollback()
            except psycopg.Error as exc:
                raise EngineUnavailable(f"PostgreSQL {_describe(self._dsn)} failed: {exc}") from exc
            finally:
                self._give_back(conn, reusable=not conn.broken)
            self._version = f"PostgreSQL {raw.split()[0]}"  # "16.2 (Debian 16.2-1)" -> 16.2
        return self._version

    @contextlib.contextmanager
    def session(self, reads: tuple[str, ...] = ()) -> Iterator[PostgresSession]:
        """A rolled-back session; `reads` puts loaded databases' schemas on its search_path (read-only)."""
        self._grant_reads(reads)
        conn, pooled = self._acquire_marked()
        reconnect = (lambda: self._connect(self._candidate_dsn())) if pooled else None
        sess = PostgresSession(conn, _next_schema_name(), self._timeout_ms, reads, self._watchdog, reconnect)
        try:
            yield sess
        finally:
            conn = sess._conn  # a pooled connection found closed at the first round trip was replaced
            clean = sess.finish()
            if sess.escaped or not clean:
                with contextlib.suppress(EngineUnavailable):  # a server that is gone keeps no session's schema
                    self._sweep(sess.schema)
            self._give_back(conn, clean, sess.savepoints)

    def loaded(self, schema: str | None) -> bool:
        """Whether a loaded database's schema is on this server (remembered once seen)."""
        if schema and schema not in self._loaded:
            with contextlib.closing(self._connect(self._dsn)) as conn:
                if conn.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", [schema]).fetchone():
                    self._loaded.add(schema)
        return schema in self._loaded

    def reachable(self) -> bool:
        """Whether the server still answers (a lost session may be the candidate ending its own backend)."""
        try:
            with contextlib.closing(self._connect(self._dsn)) as conn:
                conn.execute("SELECT 1")
            return True
        except (EngineUnavailable, psycopg.Error):
            return False

    def _terminate_backend(self, pid: int) -> None:
        """End a backend the watchdog's cancel did not stop (PL/pgSQL can catch a cancel)."""
        with contextlib.closing(self._connect(self._dsn)) as conn:
            conn.execute("SELECT pg_catalog.pg_terminate_backend(%s)", [pid])

    def _sweep(self, schema: str) -> None:
        """After a session that committed (or lost its backend): as the administrator, drop its schema
        and reset the candidate role, whose settings and password a committed statement can change."""
        with contextlib.closing(self._connect(self._dsn)) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
            if self.candidate_role is not None:
                role = sql.Identifier(self.candidate_role)
                conn.execute(_ROLE_LOCK)
                conn.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(role))
                conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(role, sql.Literal(self._candidate_password)))
                per_database = conn.execute(
                    "SELECT d.datname FROM pg_catalog.pg_db_role_setting s JOIN pg_catalog.pg_database d"
                    " ON d.oid = s.setdatabase WHERE s.setrole = %s::regrole",
                    [self.candidate_role],
                ).fetchall()
                for (database,) in per_database:
                    conn.execute(
                        sql.SQL("ALTER ROLE {} IN DATABASE {} RESET ALL").format(role, sql.Identifier(database))
                    )
            conn.commit()

    def run_baseline(self, statements: list[str]) -> None:
        """Raw psycopg baseline: run statements in one transaction, roll back; errors propagate."""
        conn = self._acquire()
        try:
            for statement in statements:
                conn.execute(statement)
        finally:
            self._give_back(conn, reusable=_rolled_back(conn))

    def __reduce__(self):
        """Pickled for another process (normalize_databases' workers): an engine on the same server and
        settings with connections of its own; an embedded server stays in the care of this process."""
        return PostgresEngine, (self._dsn, self._timeout_ms / 1000)

    def close(self) -> None:
        """Close pooled connections. An embedded server is left running for reuse."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> PostgresEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A plain autocommit connection for bulk work (loading databases); the caller groups
        statements with `conn.transaction()`. It is closed afterwards rather than pooled: it may
        hold session state the caller set.
        """
        conn = self._connect()
        conn.autocommit = True
        try:
            conn.execute(sql.SQL("SET statement_timeout = {}").format(sql.Literal(self._timeout_ms)))
            yield conn
        finally:
            conn.close()

    def _acquire(self) -> psycopg.Connection:
        return self._acquire_marked()[0]

    def _acquire_marked(self) -> tuple[psycopg.Connection, bool]:
        with self._lock:
            if self._closed:
                raise EngineUnavailable("the PostgreSQL engine has been closed")
            if self._idle:
                return self._idle.pop(), True
        return self._connect(self._candidate_dsn()), False

    def _candidate_dsn(self) -> str:
        """The conninfo sessions use: the candidate role's, set up on first use (see the module doc)."""
        with self._setup_lock:
            if self._session_dsn is None:
                self._session_dsn = self._set_up_candidate_role()
            return self._session_dsn

    def _set_up_candidate_role(self) -> str:
        role = sql.Identifier(CANDIDATE_ROLE)
        # Every engine on the same credentials derives the same password, so concurrent
        # processes do not lock each other out; the role is worth nothing beyond a session.
        admin_password = psycopg.conninfo.conninfo_to_dict(self._dsn).get("password") or ""
        password = "plb_" + hashlib.sha256(f"{CANDIDATE_ROLE}:{admin_password}".encode()).hexdigest()[:32]
        conn = self._connect(self._dsn)
        try:
            allowed = conn.execute(
                "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
            if not (allowed and allowed[0]):
                return self._without_candidate_role("the configured user may not create roles")
            conn.execute(_ROLE_LOCK)
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [CANDIDATE_ROLE]).fetchone()
            attributes = sql.SQL("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD {}")
            conn.execute(
                sql.SQL("ALTER ROLE {} " if exists else "CREATE ROLE {} ").format(role)
                + attributes.format(sql.Literal(password))
            )
            # A role may set its own defaults (ALTER ROLE ... SET): drop any a candidate left behind.
            conn.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(role))
            database = sql.Identifier(conn.info.dbname)
            conn.execute(sql.SQL("GRANT CONNECT, CREATE, TEMPORARY ON DATABASE {} TO {}").format(database, role))
            # Its own schema is the "$user" entry of a plain connection's search_path (run_baseline).
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {r} AUTHORIZATION {r}").format(r=role))
            # Databases loaded from now on by this user are readable, and only readable.
            conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO {}").format(role))
            conn.execute(sql.SQL("ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO {}").format(role))
            conn.commit()
        except psycopg.Error as exc:
            return self._without_candidate_role(f"setting up the role failed: {str(exc).strip()}")
        finally:
            conn.close()
        dsn = psycopg.conninfo.make_conninfo(self._dsn, user=CANDIDATE_ROLE, password=password)
        try:
            psycopg.connect(dsn, connect_timeout=_CONNECT_TIMEOUT_S).close()
        except psycopg.Error as exc:
            return self._without_candidate_role(f"the server refuses its login: {str(exc).strip()}")
        self.candidate_role, self._candidate_password = CANDIDATE_ROLE, password
        return dsn

    def _without_candidate_role(self, why: str) -> str:
        warnings.warn(
            f"PostgreSQL sessions run as the configured user, not as {CANDIDATE_ROLE}: {why}; "
            "a candidate that commits can then change loaded databases",
            stacklevel=4,
        )
        return self._dsn

    def _grant_reads(self, schemas: tuple[str, ...]) -> None:
        """Let the candidate role read loaded schemas (USAGE, SELECT), once per schema and engine."""
        self._candidate_dsn()
        with self._setup_lock:
            todo = [s for s in schemas if s not in self._granted]
            if self.candidate_role is None or not todo:
                return
            conn = self._connect(self._dsn)
            try:
                for schema in todo:
                    grant = sql.SQL("GRANT USAGE ON SCHEMA {s} TO {r}; GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {r}")
                    try:
                        conn.execute(_ROLE_LOCK)
                        conn.execute(grant.format(s=sql.Identifier(schema), r=sql.Identifier(self.candidate_role)))
                        conn.commit()
                        self._granted.add(schema)
                    except psycopg.Error:
                        conn.rollback()  # not loaded (yet): the session's reads of it fail as before
            finally:
                conn.close()

    def _connect(self, dsn: str | None = None) -> psycopg.Connection:
        try:
            # prepare_threshold=None: never prepare, so statements without parameters always
            # use the simple protocol (several statements per string) and DISCARD ALL is safe.
            return psycopg.connect(
                dsn or self._dsn, autocommit=False, prepare_threshold=None, connect_timeout=_CONNECT_TIMEOUT_S
            )
        except psycopg.Error as exc:
            raise EngineUnavailable(
                f"cannot connect to PostgreSQL {_describe(self._dsn)}: {str(exc).strip()}; "
                "check that the server runs, or set PLBENCH_PG_DSN to a reachable server"
            ) from exc

    def _give_back(self, conn: psycopg.Connection, reusable: bool, savepoints: int = 0) -> None:
        with self._lock:
            checkouts, opened = self._used.get(conn, (0, 0))
            checkouts, opened = self._used[conn] = (checkouts + 1, opened + savepoints)
            if (
                reusable
                and not self._closed
                and len(self._idle) < _POOL_MAX
                and checkouts < _CHECKOUTS_MAX
                and opened < _CONNECTION_SAVEPOINTS_MAX
                and not conn.broken
                and conn.info.transaction_status == TransactionStatus.IDLE
            ):
                self._idle.append(conn)
                return
        conn.close()


def _rolled_back(conn: psycopg.Connection) -> bool:
    try:
        conn.rollback()
        return conn.info.transaction_status == TransactionStatus.IDLE
    except psycopg.Error:
        return False
