"""A writable copy of one loaded database inside a rolled-back engine session, and runs of procedures on it.

Loaded databases are read-only to the candidate role, so a session copies every user table into its
private schema (first on the search_path, so unqualified names reach the copies). A run is: savepoint,
the task's setup, the procedure, its calls; after each call the state of every user table is read as
(row count, order-independent content hash: the sum of every row's hash_record_extended) computed
in SQL; then back to the savepoint. A shuffled
workspace copies the rows in another physical order, for the determinism check.

The build's own procedures (the reference, its mutants, the adapters' variants: `run_built`) run many
times on one setup: the setup then stays applied under its own savepoint between their runs, its initial
state read once, and a run only installs the procedure and calls it: its rollback to the setup goes with
the next run's install. Every other use of the workspace first rolls the setup back (and a run's changes
with it), so it sees the plain copy.

Procedures run inside the session's transaction, so a procedure that issues COMMIT or ROLLBACK fails
with SQLSTATE 2D000 (invalid transaction termination): a reference never does, a candidate that does
fails that call. Between calls nothing but the calls runs; the state reads are schema-qualified and call
only pg_catalog functions, so a candidate's objects cannot stand in for them, and a table the candidate
replaced by a view or put under row-level security is reported as tampered with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from psycopg import sql

from plbench.dialects import DIALECTS
from plbench.engines.base import QueryResult
from plbench.normalize.emit import NormalizedDatabase
from plbench.normalize.typemap import TargetName

RUN_SAVEPOINT = "plb_run"
SETUP_SAVEPOINT = "plb_setup"
TAMPERED = "tampered"


@dataclass(frozen=True)
class CallResult:
    call: str
    error: str | None  # the SQLSTATE raised, or "timeout"
    message: str
    lines: tuple[str, ...]
    state: dict[str, tuple[int, str]]  # table -> (rows, content hash)

    def observed(self) -> tuple:
        """What the grader compares: error code, output lines, every table's state."""
        return (self.error, self.lines, tuple(sorted(self.state.items())))

    @classmethod
    def of(cls, call: str, done, state: dict[str, tuple[int, str]]) -> CallResult:
        """The call's result from the engine's ExecResult `done` and the state it left."""
        return cls(call, code_of(done), done.error.message if done.error else "", tuple(done.lines), state)


@dataclass
class Trace:
    install_error: str | None = None  # why the procedure (or the task setup) did not install
    initial: dict[str, tuple[int, str]] = field(default_factory=dict)  # the state before the first call
    calls: list[CallResult] = field(default_factory=list)


def _quoted_identifier(name: str) -> str:
    return sql.Identifier(name).as_string(None)


def _as_written(name: str) -> str:
    """A catalog name as the loader writes it: quoted only when PostgreSQL needs the quotes."""
    rules = DIALECTS["postgres"]
    return TargetName(name, not rules.plain_identifier.match(name) or name.upper() in rules.reserved).sql


@dataclass(frozen=True)
class DatabaseCopy:
    """What a workspace copies and what the grader needs of a loaded database (names as its SQL writes them)."""

    key: str
    schema_name: str
    tables: tuple[str, ...]
    keys: dict[str, tuple[str, ...]]  # table -> primary key columns
    text_columns: dict[str, tuple[str, ...]]  # table -> text columns

    @classmethod
    def of(cls, db: NormalizedDatabase) -> DatabaseCopy:
        keys, texts = {}, {}
        for t in db.tables:
            by_source = {c.source.name.lower(): c.target.sql for c in t.columns}
            keys[t.target.sql] = tuple(by_source[k.lower()] for k in t.source.primary_key if k.lower() in by_source)
            texts[t.target.sql] = tuple(c.target.sql for c in t.columns if c.source.family == "text")
        return cls(db.key, db.schema_name, tuple(t.target.sql for t in db.tables), keys, texts)

    @classmethod
    def introspect(cls, session, schema: str) -> DatabaseCopy:
        """The same facts read from a loaded schema's catalog (what `plbench evaluate` has)."""
        literal = sql.Literal(schema).as_string(None)
        tables = session.query(
            "SELECT c.relname, a.attname, t.typname, coalesce(a.attnum = ANY(i.indkey), false) "
            "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
            "AND NOT a.attisdropped JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
            "LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary "
            f"WHERE c.relnamespace = {literal}::regnamespace AND c.relkind = 'r' ORDER BY c.relname, a.attnum"
        )
        if not tables.ok:
            raise RuntimeError(f"cannot read the catalog of schema {schema}: {tables.error}")
        names, keys, texts = {}, {}, {}
        for table, column, type_name, in_key in tables.rows:
            name, col = _as_written(table), _as_written(column)
            names.setdefault(name, None)
            keys.setdefault(name, ())
            texts.setdefault(name, ())
            keys[name] += (col,) if in_key else ()
            texts[name] += (col,) if type_name == "text" else ()
        return cls(schema, schema, tuple(names), keys, texts)


class Workspace:
    """A database copy in `session`'s private schema; `run` executes one procedure from the initial state."""

    def __init__(self, session, db: NormalizedDatabase | DatabaseCopy, shuffled: bool = False):
        self.session = session
        self.db = db if isinstance(db, DatabaseCopy) else DatabaseCopy.of(db)
        self.schema = session.schema
        self.tables = list(self.db.tables)
        self.scale: dict[str, int] = {}
        # run_built's setup applied under SETUP_SAVEPOINT: its key and its initial state (or why it failed)
        self._setup: tuple | None = None
        self._setup_initial: dict[str, tuple[int, str]] | str = {}
        self._running = False
        self._run_left = False  # a built run's changes are still there (its rollback goes with the next install)
        self._remembered: dict[tuple[str, str], QueryResult] = {}  # (how, text) -> a read of the plain copy
        self._copy([self._copy_statement(table, shuffled, 1) for table in self.tables])

    def _copy_statement(self, table: str, shuffled: bool, times: int) -> str:
        source = _quoted_identifier(self.db.schema_name)
        order = " ORDER BY pg_catalog.md5(src::text) DESC" if shuffled else ""
        # repeated rows cannot keep the unique indexes
        indexes, repeat = ("", f", pg_catalog.generate_series(1, {times})") if times > 1 else (" INCLUDING INDEXES", "")
        return (
            f"CREATE TABLE {table} (LIKE {source}.{table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS{indexes}); "
            f"INSERT INTO {table} SELECT src.* FROM {source}.{table} AS src{repeat}{order}"
        )

    def _copy(self, statements: list[str]) -> None:
        """The copies in one round trip: the harness's own text, of names the catalog spells."""
        done = self.session.execute_first("; ".join(statements))
        if not done.ok:
            raise RuntimeError(f"{self.db.key}: cannot copy its tables: {done.error}")

    def rescale(self, scale: dict[str, int]) -> None:
        """Make each table of `scale` hold its rows that many times over (B2's timing copy), every other
        table its rows once; only the tables whose factor changes are copied again."""
        self._drop_setup()
        self._remembered.clear()
        wanted = {t: n for t, n in scale.items() if n > 1}
        changed = [t for t in sorted(set(self.scale) | set(wanted)) if self.scale.get(t, 1) != wanted.get(t, 1)]
        if changed:
            self._copy([f"DROP TABLE {t}; " + self._copy_statement(t, False, wanted.get(t, 1)) for t in changed])
        self.scale = wanted

    def state_query(self, tables: list[str]) -> str:
        return state_query(self.schema, tables)

    def call(self, call: str, state_query: str, unchanged: dict | None = None) -> CallResult:
        """One call and the state it leaves ({} without a `state_query`), in one round trip (both are the
        harness's text); tables the query does not read keep their state in `unchanged`. When the call
        fails, or the state read does, the call gets the error and its work is undone, as if it had raised
        it: a call gains nothing so, since it could raise any SQLSTATE itself; the state is then read alone."""
        done, read = self.session.execute_own(f"{call}; {state_query}" if state_query else call)
        state = {}
        if state_query:
            state = {**(unchanged or {}), **(_state(read) if read is not None else self._own_state(state_query))}
        return CallResult.of(call, done, state)

    def _own_state(self, state_query: str) -> dict[str, tuple[int, str]]:
        done, read = self.session.execute_own(state_query)
        return _state(read if read is not None else done)

    def query(self, text: str):
        self._drop_setup()
        return self.session.query(text)

    def read(self, text: str) -> QueryResult:
        """`query` in one round trip, for the harness's own reads of the copy whose text is known to parse
        (names the catalog spells, in a fixed statement): see PostgresSession.execute_own."""
        self._drop_setup()
        done, rows = self.session.execute_own(text)
        return rows if rows is not None else QueryResult(error=done.error, timed_out=done.timed_out)

    def copy_read(self, text: str, own: bool = True) -> QueryResult:
        """`read` (`own`) or `query` of the plain copy, remembered by text: the build's reads of the data
        between runs (column values, counts), which only a rescale changes. A remembered answer leaves the
        setup applied, so the next built run of it does not apply it again."""
        key = ("read" if own else "query", text)
        if key not in self._remembered:
            self._remembered[key] = self.read(text) if own else self.query(text)
        return self._remembered[key]

    def _drop_setup(self) -> None:
        """Back to the plain copy, outside a run (inside one, the run's own callbacks look at its state)."""
        if self._setup is not None and not self._running:
            self.session.execute_own(undo_to(SETUP_SAVEPOINT))
            self._setup, self._run_left = None, False

    def _apply_setup(self, setup: tuple[str, ...], tables: tuple[str, ...]) -> dict[str, tuple[int, str]] | str:
        """The state of `tables` once `setup` ran (applied now unless it is applied already), or why it failed."""
        if self._setup != (setup, tables):
            self._drop_setup()
            self.session.execute_own(f"SAVEPOINT {SETUP_SAVEPOINT}")
            self._setup = (setup, tables)
            why = install(self.session, setup)
            self._setup_initial = why if why else self._own_state(self.state_query(list(tables)))
        return self._setup_initial

    def run(
        self,
        setup: list[str],
        procedure: str,
        calls: list[str],
        extra_tables: tuple[str, ...] = (),
        inspect: Callable[[int, CallResult], bool] | None = None,
        start: Callable[[], None] | None = None,
        states: bool = True,
    ) -> Trace:
        """Run the procedure's calls from the initial state (the copy plus `setup`), then restore it.

        `inspect(index, result)` sees each call's result while its state is still live; False stops the run.
        `start()` sees the initial state, before the first call. Without `states`, no state is read (timing).
        """
        self._drop_setup()
        tables = self.tables + [t for t in extra_tables if t not in self.tables]
        trace = Trace()
        self.session.execute_own(f"SAVEPOINT {RUN_SAVEPOINT}")
        try:
            if why := install(self.session, [*setup, procedure]):
                trace.install_error = why
                return trace
            trace.initial = self._own_state(self.state_query(tables)) if states else {}
            if start is not None:
                start()
            self._calls(trace, calls, self.state_query(tables) if states else "", None, inspect)
            return trace
        finally:
            self.session.execute_own(undo_to(RUN_SAVEPOINT))

    def run_built(
        self,
        setup: list[str],
        procedure: str,
        calls: list[str],
        written: tuple[str, ...],
        inspect: Callable[[int, CallResult], bool] | None = None,
        start: Callable[[], None] | None = None,
    ) -> Trace:
        """`run` for a procedure the build made (see suites.run_seed), which can change only the tables
        `written`: after each call only they are read, every other table keeps its initial state. The setup
        stays applied for the next run of the same setup (see the module docstring)."""
        tables = tuple(self.tables + [t for t in written if t not in self.tables])
        initial = self._apply_setup(tuple(setup), tables)
        trace = Trace()
        if isinstance(initial, str):
            trace.install_error = initial
            return trace
        # The last run's rollback and this run's savepoint go ahead of the install, below the savepoints the
        # session opens for the install and each call, so the next rollback takes those too: a session of
        # thousands of runs keeps a few subtransactions open, not thousands (PostgreSQL walks every open one
        # to see a row this transaction wrote, such as each row of the copy).
        undo = undo_to(RUN_SAVEPOINT) + "; " if self._run_left else ""
        done = self.session.execute(procedure, before=f"{undo}SAVEPOINT {RUN_SAVEPOINT}; ")
        self._run_left = True
        if not done.ok:
            trace.install_error = why_failed(done)
            return trace
        self._running = True
        try:
            trace.initial = dict(initial)
            if start is not None:
                start()
            changing = self.state_query([t for t in tables if t in written])
            self._calls(trace, calls, changing, trace.initial, inspect)
            return trace
        finally:
            self._running = False

    def _calls(self, trace: Trace, calls: list[str], state_query: str, unchanged: dict | None, inspect) -> None:
        for index, call in enumerate(calls):
            result = self.call(call, state_query, unchanged)
            trace.calls.append(result)
            if inspect is not None and not inspect(index, result):
                break


def undo_to(savepoint: str) -> str:
    """Back to `savepoint`, which is then gone."""
    return f"ROLLBACK TO SAVEPOINT {savepoint}; RELEASE SAVEPOINT {savepoint}"


def state_query(schema: str, tables: list[str]) -> str:
    """One statement reading (rows, hash) of every table of `schema`, and the tables no longer plain."""
    quoted = _quoted_identifier(schema)
    parts = [
        f"SELECT {sql.Literal(t.strip(chr(34))).as_string(None)}, pg_catalog.count(*), "
        f"pg_catalog.sum(pg_catalog.hash_record_extended(r, 0)) FROM {quoted}.{t} AS r"
        for t in tables
    ]
    tampered = (
        f"SELECT c.relname::text, -1, NULL::numeric FROM pg_catalog.pg_class c WHERE c.relnamespace = "
        f"{sql.Literal(schema).as_string(None)}::regnamespace AND c.relname = ANY(ARRAY["
        + ", ".join(sql.Literal(t.strip(chr(34))).as_string(None) for t in tables)
        + "]) AND (c.relkind <> 'r' OR c.relrowsecurity)"
    )
    return " UNION ALL ".join(parts + [tampered])


def _state(result) -> dict[str, tuple[int, str]]:
    """(rows, content hash) per table from a state query's result; a table no longer plain is TAMPERED."""
    if not result.ok:
        return {TAMPERED: (-1, f"state unreadable: {result.error.code if result.error else 'timeout'}")}
    state = {}
    for name, rows, digest in result.rows:
        state[name] = (-1, TAMPERED) if rows == -1 else (rows, str(digest or 0))
    return state


def install(session, statements) -> str | None:
    """Why the setup or the procedure did not install (each statement on its own: any may fail to parse)."""
    for statement in statements:
        done = session.execute(statement)
        if not done.ok:
            return why_failed(done)
    return None


def why_failed(result) -> str:
    return f"{code_of(result)}: {result.error.message if result.error else 'timeout'}"


def code_of(result) -> str | None:
    if result.timed_out:
        return "timeout"
    return result.error.code if result.error else None
