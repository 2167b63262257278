"""A fresh copy of one database in the Oracle engine's schema, and runs of procedures on it.

Isolation: the configured schema is emptied and refilled per run, not a user (schema) per run. Every run
is one engine session (plbench.engines.oracle): it records USER_OBJECTS, creates and fills the database's
tables from the normalized Oracle DDL and data, runs the task's setup, installs the procedure, makes the
calls, and drops every object that appeared when it ends; sessions are serialized by the engine's lock.
A user per run would need CREATE USER, DROP USER and CREATE ANY TABLE / PROCEDURE for the DSN's user, and
a candidate's procedure runs with its owner's rights: it would hold those privileges over every schema of
the server. Emptied and refilled, the DSN's user needs only CREATE SESSION, CREATE TABLE, CREATE PROCEDURE
and a quota on its tablespace, and owns nothing the candidate could harm but the copy.

A run is as on PostgreSQL (plbench.procedures.workspace): the initial state once the setup ran, then per
call its raised error (the ORA- code: RAISE_APPLICATION_ERROR(-20001, ...) is ORA-20001; "timeout" past
the engine's call timeout), its DBMS_OUTPUT lines, and every user table's state. A failing call's work is
undone by Oracle's statement-level rollback, as a failed call's is by PostgreSQL's savepoint. Oracle
commits DDL implicitly, so a procedure that issues COMMIT is no failure here: the copy is dropped anyway.

A table's state is (row count, sha256 of its rows' texts in sorted order), the rows read by
`SELECT * FROM <table>` and ordered in Python: Oracle cannot ORDER BY a CLOB column, and the reads stay
one fixed statement a table whose text is checked without a server. The tables read are those the copy
and the setup created (USER_TABLES then, less what the schema held before); a table that is no longer
in USER_TABLES after a call, or cannot be read, is TAMPERED. Values come back typed as Oracle types them
(NUMBER, DATE with a time, '' as NULL), so an Oracle run is compared with the Oracle reference's own run,
never with PostgreSQL's recorded hashes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp

from plbench.dialects import DIALECTS
from plbench.normalize.emit import NormalizedDatabase
from plbench.normalize.load import oracle_load_statements
from plbench.normalize.typemap import TargetName
from plbench.procedures.workspace import TAMPERED, CallResult, Trace, install, why_failed

TABLES_QUERY = "SELECT table_name FROM user_tables ORDER BY table_name"


@dataclass(frozen=True)
class OracleCopy:
    """What an Oracle run copies: the database's statements in order, and each table's key columns."""

    key: str
    statements: tuple[str, ...]  # tables, rows, constraints (oracle_load_statements)
    keys: dict[str, tuple[str, ...]]  # stored table name -> stored primary key column names

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(self.keys)

    @classmethod
    def of(cls, db: NormalizedDatabase) -> OracleCopy:
        keys = {}
        for t in db.tables:
            by_source = {c.source.name.lower(): c.target.name for c in t.columns}
            keys[t.target.name] = tuple(by_source[k.lower()] for k in t.source.primary_key if k.lower() in by_source)
        return cls(db.key, tuple(oracle_load_statements(db)), keys)

    @classmethod
    def read(cls, folder: Path, key: str) -> OracleCopy:
        """The copy from a database's normalized Oracle files (plbench.normalize.emit.write_files: schema.sql,
        data.sql, constraints.sql), the keys from its CREATE TABLE statements; ValueError naming the file."""
        creates = _statements(folder / "schema.sql", _BETWEEN_STATEMENTS)
        inserts = _statements(folder / "data.sql", _BETWEEN_INSERTS)
        if bad := next((s for s in inserts if not s.startswith("INSERT ALL\n")), None):
            raise ValueError(f"{folder / 'data.sql'}: not an INSERT ALL batch: {bad[:80]!r}")
        constraints = _statements(folder / "constraints.sql", _BETWEEN_STATEMENTS)
        return cls(key, (*creates, *inserts, *constraints), dict(map(_primary_key, creates)))


_BETWEEN_STATEMENTS = re.compile(r"(?<=;)\n\n")  # schema.sql and constraints.sql: "\n\n".join(statements)
_BETWEEN_INSERTS = re.compile(r"(?<=\nSELECT 1 FROM DUAL;)\n")  # data.sql: one INSERT ALL batch a line run


def _statements(path: Path, between: re.Pattern) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: the database's Oracle normalization has not run") from None
    return [s for s in between.split(text.strip()) if s]


def _primary_key(create: str) -> tuple[str, tuple[str, ...]]:
    """(stored table name, stored primary key columns) of a normalized CREATE TABLE."""
    tree = sqlglot.parse_one(create, read=DIALECTS["oracle"].sqlglot_name)
    key = next(tree.find_all(exp.PrimaryKey), None)
    return _stored(tree.find(exp.Table).this), tuple(_stored(c) for c in key.expressions) if key else ()


def _stored(ident: exp.Identifier) -> str:
    return ident.name if ident.quoted else DIALECTS["oracle"].fold(ident.name)


def table_query(stored: str) -> str:
    """Every row of one table, named as the DDL declares it: quoted only when Oracle needs the quotes."""
    return f"SELECT * FROM {TargetName(stored, DIALECTS['oracle'].needs_quotes(stored)).sql}"


def row_text(values) -> str:
    """One row as text: the values as the driver fetched them, NULL as None."""
    return repr(tuple(values))


def table_state(rows: list[tuple]) -> tuple[int, str]:
    """(row count, content hash) of a table's rows, whatever order they came in."""
    digest = hashlib.sha256("\n".join(sorted(map(row_text, rows))).encode()).hexdigest()
    return len(rows), digest


def keyed_rows(columns: list[str], rows: list[tuple], key: tuple[str, ...]) -> list[tuple[str, str]]:
    """(key text, row text) per row, for the detail's row difference; the whole row is the key without one."""
    at = [columns.index(k) for k in key if k in columns]
    return [(row_text(r[i] for i in at) if at else row_text(r), row_text(r)) for r in rows]


@dataclass
class OracleTrace(Trace):
    rows: list[dict[str, list[tuple[str, str]]]] = field(default_factory=list)  # per call: table -> keyed rows


class OracleWorkspace:
    """Runs one procedure at a time on a fresh copy of `db` (a session of its own each run)."""

    def __init__(self, engine, db: OracleCopy | NormalizedDatabase):
        self.engine = engine
        self.db = db if isinstance(db, OracleCopy) else OracleCopy.of(db)

    def run(
        self,
        setup: list[str],
        procedure: str,
        calls: list[str],
        inspect: Callable[[int, CallResult], bool] | None = None,
    ) -> OracleTrace:
        """Copy, setup, install, then every call with the state it leaves; `inspect(index, result)` False
        stops the run. The copy failing to load is an error of the harness, not of the procedure."""
        trace = OracleTrace()
        with self.engine.session() as session:
            before = _table_names(session)
            if why := install(session, self.db.statements):
                raise RuntimeError(f"{self.db.key}: cannot copy its tables on Oracle: {why}")
            if why := install(session, setup):
                trace.install_error = why
                return trace
            tables = [t for t in _table_names(session) if t not in before]
            if why := install(session, [procedure]):
                trace.install_error = why
                return trace
            trace.initial = self._state(session, tables)[0]
            for index, call in enumerate(calls):
                done = session.execute(call)
                state, rows = self._state(session, tables)
                result = CallResult.of(call, done, state)
                trace.calls.append(result)
                trace.rows.append(rows)
                if inspect is not None and not inspect(index, result):
                    break
        return trace

    def _state(self, session, tables: list[str]) -> tuple[dict[str, tuple[int, str]], dict]:
        """Every table's (rows, hash) and keyed rows; a table gone from USER_TABLES, or unreadable, TAMPERED."""
        present = set(_table_names(session))
        state, rows = {}, {}
        for table in tables:
            read = session.query(table_query(table)) if table in present else None
            if read is None or not read.ok:
                state[table] = (-1, TAMPERED)
                continue
            state[table] = table_state(read.rows)
            rows[table] = keyed_rows(read.columns, read.rows, self.db.keys.get(table, ()))
        return state, rows


def _table_names(session) -> list[str]:
    listed = session.query(TABLES_QUERY)
    if not listed.ok:
        raise RuntimeError(f"cannot list USER_TABLES: {why_failed(listed)}")
    return [name for (name,) in listed.rows]
