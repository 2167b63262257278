"""PostgresEngine against a real PostgreSQL (embedded pgserver, or PLBENCH_PG_DSN)."""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import threading
import time
from pathlib import Path

import psycopg
import pytest

from plbench.engines import pg_wire, postgres
from plbench.engines.base import EngineUnavailable
from plbench.engines.postgres import PostgresEngine

PG_DATA_DIR = Path(__file__).resolve().parent.parent / ".cache" / "test-pgserver"

NOTICES = """
DO $$
BEGIN
  RAISE NOTICE 'first';
  RAISE NOTICE 'second %', 2;
  RAISE NOTICE 'third';
END $$;
"""


def _notice_value(session, expression: str) -> str:
    result = session.execute(f"DO $$ BEGIN RAISE NOTICE '%', {expression}; END $$")
    assert result.ok, result
    return result.lines[0]


def test_version(pg_engine):
    assert pg_engine.version().startswith("PostgreSQL ")
    assert pg_engine.dialect == "postgres"


def test_notices_are_captured_in_order(pg_engine):
    with pg_engine.session() as session:
        result = session.execute(NOTICES)
    assert result.ok
    assert result.lines == ["first", "second 2", "third"]


def test_each_statement_gets_only_its_own_notices(pg_engine):
    with pg_engine.session() as session:
        session.execute(NOTICES)
        assert session.execute("DO $$ BEGIN RAISE NOTICE 'alone'; END $$").lines == ["alone"]


def test_errors_give_sqlstate_and_the_session_goes_on(pg_engine):
    with pg_engine.session() as session:
        session.execute("CREATE FUNCTION kept() RETURNS int LANGUAGE sql AS 'SELECT 7'")
        syntax = session.execute("SELEC 1")
        assert syntax.error is not None and syntax.error.code == "42601"
        assert not syntax.ok and not syntax.timed_out
        unknown = session.execute("SELECT no_such_function(1)")
        assert unknown.error.code == "42883"
        assert "no_such_function" in unknown.error.message
        # Earlier work survived the failed statements.
        assert _notice_value(session, "kept()") == "7"


def test_notices_before_an_error_are_kept(pg_engine):
    with pg_engine.session() as session:
        result = session.execute("DO $$ BEGIN RAISE NOTICE 'before'; PERFORM 1/0; END $$")
    assert result.lines == ["before"]
    assert result.error.code == "22012"


def test_statement_timeout():
    engine = PostgresEngine.start(os.environ.get("PLBENCH_PG_DSN"), data_dir=PG_DATA_DIR, statement_timeout_s=0.5)
    try:
        with engine.session() as session:
            started = time.monotonic()
            result = session.execute("SELECT pg_sleep(5)")
            assert time.monotonic() - started < 3
            assert result.timed_out and not result.ok
            assert result.error.code == "57014"
            assert session.execute("SELECT 1").ok
    finally:
        engine.close()


def test_sessions_are_isolated(pg_engine):
    with pg_engine.session() as session:
        assert session.execute("CREATE TYPE pair AS (a int, b int)").ok
        made = session.execute("CREATE FUNCTION made_here() RETURNS pair LANGUAGE sql AS 'SELECT (1,2)'")
        assert made.ok
        assert _notice_value(session, "(made_here()).b") == "2"
        first_schema = session.schema
    with pg_engine.session() as session:
        assert session.schema != first_schema
        assert session.execute("SELECT made_here()").error.code == "42883"
        assert session.execute("SELECT NULL::pair").error.code == "42704"
        count = f"(SELECT count(*) FROM pg_namespace WHERE nspname = '{first_schema}')"
        assert _notice_value(session, count) == "0"


def test_user_function_shadows_builtin(pg_engine):
    with pg_engine.session() as session:
        assert _notice_value(session, "reverse('abc')") == "cba"
        created = session.execute(
            "CREATE FUNCTION reverse(s text) RETURNS text LANGUAGE sql AS $$ SELECT 'mine:' || s $$"
        )
        assert created.ok
        assert _notice_value(session, "reverse('abc')") == "mine:abc"
    with pg_engine.session() as session:
        assert _notice_value(session, "reverse('abc')") == "cba"


def test_multi_statement_string(pg_engine):
    script = """
    CREATE FUNCTION pg_temp.twice(x int) RETURNS int LANGUAGE sql AS 'SELECT 2 * x';
    DO $$ BEGIN RAISE NOTICE 'twice: %', pg_temp.twice(21); END $$;
    """
    with pg_engine.session() as session:
        result = session.execute(script)
    assert result.ok, result
    assert result.lines == ["twice: 42"]


def test_two_sessions_in_two_threads(pg_engine):
    barrier = threading.Barrier(2, timeout=30)
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with pg_engine.session() as session:
                barrier.wait()  # both sessions are open at the same time
                session.execute(f"CREATE FUNCTION who() RETURNS int LANGUAGE sql AS 'SELECT {n}'")
                barrier.wait()
                results[n] = [_notice_value(session, "who()") for _ in range(20)]
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert results == {1: ["1"] * 20, 2: ["2"] * 20}


@pytest.fixture
def fresh_engine():
    """An engine of its own: its connections have served no other test (so none is due to be closed)."""
    engine = PostgresEngine.start(os.environ.get("PLBENCH_PG_DSN"), data_dir=PG_DATA_DIR)
    yield engine
    engine.close()


@pytest.mark.parametrize("ending", ["leaving the session", "its last calls"])
def test_what_survives_a_rollback_is_cleared_before_the_connection_is_reused(fresh_engine, ending):
    # A prepared statement and a session advisory lock outlive ROLLBACK; the session's end clears them,
    # whether it ends on leaving or in the round trip of its last calls.
    pg_engine = fresh_engine
    with pg_engine.session() as session:
        pid = session.backend_pid
        assert session.execute("PREPARE plb_left AS SELECT 1; SELECT pg_advisory_lock(4243)").ok
        assert session.execute("CREATE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 1'").ok
        if ending == "its last calls":
            assert [o.value for o in session.call_all("one", [[], []], last=True)] == [1, 1]
            with pytest.raises(RuntimeError, match="has ended"):
                session.execute("SELECT 1")
    with pg_engine.session() as session:
        assert session.backend_pid == pid  # the same connection, back from the pool
        assert session.execute("EXECUTE plb_left").error.code == "26000"
        held = session.query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert held.rows == [(0,)]


def test_a_connection_is_closed_after_its_last_checkout(fresh_engine, monkeypatch):
    # A backend keeps what every candidate compiled, and each session then costs more: it is replaced.
    monkeypatch.setattr(postgres, "_CHECKOUTS_MAX", 3)
    pids = []
    for _ in range(7):
        with fresh_engine.session() as session:
            pids.append(session.backend_pid)
    # The first connection's first checkout was start()'s version check.
    assert [pids.index(pid) for pid in pids] == [0, 0, 2, 2, 2, 5, 5]


def test_a_connection_whose_sessions_ran_many_statements_is_closed(fresh_engine, monkeypatch):
    # Its backend holds every procedure its sessions compiled, whether in one long session (ILE's, over a
    # database's seeds) or in several (the gate's, over database copies).
    monkeypatch.setattr(postgres, "_CONNECTION_SAVEPOINTS_MAX", 3)
    swept = []
    monkeypatch.setattr(fresh_engine, "_sweep", swept.append)
    pids = []
    for statements in (1, 1, 0, 3, 2, 0, 0):
        with fresh_engine.session() as session:
            for _ in range(statements):
                assert session.execute("SELECT 1").ok
            assert session.savepoints == statements  # the first opens with the session, in the first's round trip
            pids.append(session.backend_pid)
    assert [pids.index(pid) for pid in pids] == [0, 0, 0, 0, 4, 4, 4]
    assert swept == []  # a clean connection is only closed: no schema or role of its sessions needs sweeping


def test_sessions_swept_at_once_do_not_fail_each_other(fresh_engine):
    # Two committing candidates in two workers: both sweeps reset the candidate role (a row of pg_authid).
    def sweeps() -> None:
        for _ in range(30):
            fresh_engine._sweep(postgres._next_schema_name())

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(sweeps) for _ in range(2)]:
            done.result()


def _round_trips(monkeypatch) -> list[str]:
    """The query strings sessions send from now on, one per round trip."""
    sent = []
    execute, results = psycopg.Connection.execute, pg_wire.results
    monkeypatch.setattr(
        psycopg.Connection, "execute", lambda conn, text, *a, **k: sent.append(text) or execute(conn, text, *a, **k)
    )
    monkeypatch.setattr(pg_wire, "results", lambda conn, text: sent.append(text) or results(conn, text))
    return sent


def test_a_setup_opens_the_next_statements_savepoint_in_its_round_trip(pg_engine, monkeypatch):
    sent = _round_trips(monkeypatch)
    with pg_engine.session() as session:
        assert session.execute("CREATE TYPE pair AS (a int, b int) -- a last comment", setup=True).ok
        failed = session.execute(
            "CREATE FUNCTION f() RETURNS pair LANGUAGE sql AS 'SELECT ROW(1, 2)::pair'; SELECT 1/0"
        )
        assert failed.error.code == "22012"
        # The session's set-up with the task's setup and the savepoint after it, the statement, its rollback.
        assert [t.split()[0] for t in sent] == ["BEGIN;", "CREATE", "ROLLBACK"]
        assert "CREATE TYPE pair" in sent[0] and sent[0].endswith("SAVEPOINT plb_stmt_2")
        assert session.query("SELECT ROW(1, 2)::pair::text").rows == [("(1,2)",)]  # undone to after the setup
        assert session.query("SELECT count(*) FROM pg_proc WHERE proname = 'f'").rows == [(0,)]
        assert session.execute("CREATE TYPE (", setup=True).error.code == "42601"
        assert session.query("SELECT 1").rows == [(1,)]


# Rows of table t written with the transaction's own id (xmin is the low 32 bits of pg_current_xact_id).
_TOP_LEVEL_ROWS = (
    "SELECT count(*) FILTER (WHERE xmin::text::bigint = pg_current_xact_id()::text::bigint % 4294967296), "
    "count(*) FROM t"
)


def test_the_harness_first_statements_write_as_the_transaction_itself(pg_engine):
    """Ahead of every statement, execute_first writes with the transaction's id, not a subtransaction's (later
    reads of those rows walk no savepoint); once a statement ran, it runs in a savepoint as execute_own does."""
    with pg_engine.session() as session:
        assert session.execute_first("CREATE TABLE t (x int); INSERT INTO t SELECT generate_series(1, 3)").ok
        assert session.query(_TOP_LEVEL_ROWS).rows == [(3, 3)]
        assert session.execute_first("INSERT INTO t VALUES (4)").ok
        assert session.query(_TOP_LEVEL_ROWS).rows == [(3, 4)]
        assert session.execute("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'; SELECT 1/0").error


@pytest.mark.parametrize(
    "first, statement, code",
    [
        ("execute_first", "CREATE TABLE t (x int); SELECT 1/0", "22012"),
        ("execute", "CREATE TABLE t (x int); SELECT 1/0", "22012"),
        ("execute", "CREATE TABLE t (x int); CREATE FUNCTION f( RETURNS int", "42601"),
        ("execute", "CREATE TABLE t (x int); SELECT * FROM nowhere", "42P01"),
    ],
)
def test_first_statements_that_fail_leave_nothing_and_the_session_goes_on(pg_engine, first, statement, code):
    """The harness's (execute_first) or a candidate's: whether it did not parse (nothing of its round trip ran,
    the session's set-up neither) or failed running."""
    with pg_engine.session() as session:
        failed = getattr(session, first)(statement)
        assert failed.error.code == code and not session.escaped
        assert session.query("SELECT to_regclass('t') IS NULL").rows == [(True,)]
        assert _notice_value(session, "current_schema()") == session.schema
        assert _notice_value(session, "current_setting('statement_timeout')") == "10s"
        assert session.execute("CREATE TABLE t (x int)").ok


def test_transaction_control_in_a_statement_does_not_leak(pg_engine):
    with pg_engine.session() as session:
        schema = session.schema
        committed = session.execute("CREATE FUNCTION leaks() RETURNS int LANGUAGE sql AS 'SELECT 1'; COMMIT")
        assert committed.ok
        # The session environment is restored: own schema first, timeout still set.
        assert _notice_value(session, "current_schema()") == schema
        assert _notice_value(session, "current_setting('statement_timeout')") == "10s"
    with pg_engine.session() as session:
        count = f"(SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}')"
        assert _notice_value(session, count) == "0"


def test_copy_is_refused_and_the_session_goes_on(pg_engine):
    with pg_engine.session() as session:
        out = session.execute("COPY (SELECT generate_series(1, 1000)) TO STDOUT")
        assert out.error is not None and out.error.code == "0A000"
        assert session.execute("CREATE TABLE t (x int)").ok
        assert session.execute("COPY t FROM STDIN").error is not None
        assert _notice_value(session, "(SELECT count(*) FROM t)") == "0"


def test_lost_connection_raises_engine_unavailable(pg_engine):
    with pg_engine.session() as victim:
        assert victim.execute("SELECT 1").ok  # begun: a connection lost before is replaced (the next test)
        pid = victim.backend_pid
        with pg_engine.session() as killer:
            assert killer.execute(f"SELECT pg_terminate_backend({pid}, 5000)").ok
        with pytest.raises(EngineUnavailable, match="lost the PostgreSQL connection"):
            victim.execute("SELECT 1")
    with pg_engine.session() as session:
        assert _notice_value(session, "1 + 1") == "2"


def test_a_pooled_connection_closed_before_its_session_began_is_replaced(fresh_engine):
    """As after a server restart: the pooled connection is gone before the session's first round trip, which
    then runs on a new one, whether it is a statement (sent with the set-up) or the set-up alone."""
    for first in ("execute", "query"):
        with fresh_engine.session() as session:
            assert session.execute("SELECT 1").ok
            pid = session.backend_pid
        with fresh_engine.session() as session, psycopg.connect(fresh_engine._dsn, autocommit=True) as admin:
            assert session.backend_pid == pid  # the pooled connection
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
            result = getattr(session, first)("SELECT 41 + 1")
            assert result.error is None and session.backend_pid != pid
            assert _notice_value(session, "current_schema()") == session.schema


def test_the_first_statement_shares_the_round_trip_that_sets_the_session_up(pg_engine, monkeypatch):
    sent = _round_trips(monkeypatch)
    with pg_engine.session() as session:
        assert session.execute("CREATE TABLE t AS SELECT pg_catalog.current_query() AS q").ok
        assert len(sent) == 1 and sent[0].startswith("BEGIN; ")
        assert session.query("SELECT q FROM t").rows == [(sent[0],)]
        assert _notice_value(session, "current_setting('statement_timeout')") == "10s"
    with pg_engine.session() as session:
        pass
    # The statement with the set-up; the query and the notice, each after a savepoint of its own; leaving the
    # session. The second session ran nothing, and sent nothing.
    assert len(sent) == 6


def test_a_first_statement_that_commits_is_swept(pg_engine):
    with pg_engine.session() as session:
        schema = session.schema
        assert session.execute("CREATE TABLE kept (x int); COMMIT; SELECT 1/0").error.code == "22012"
        assert session.escaped
        assert _notice_value(session, "current_schema()") == schema
    with pg_engine.session() as session:
        assert _notice_value(session, f"(SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}')") == "0"


def test_run_baseline(pg_engine):
    pg_engine.run_baseline(["CREATE TABLE baseline_t (x int)", "INSERT INTO baseline_t VALUES (1)"])
    # Rolled back: the same table can be created again.
    pg_engine.run_baseline(["CREATE TABLE baseline_t (x int)"])


def test_unreachable_server_is_engine_unavailable(tmp_path):
    with pytest.raises(EngineUnavailable, match="PLBENCH_PG_DSN"):
        PostgresEngine.start(f"postgresql://nobody@/postgres?host={tmp_path}&port=1", data_dir=tmp_path)


def test_a_server_still_starting_is_waited_for_and_one_that_is_gone_is_not(tmp_path):
    """An embedded server that stopped uncleanly replays its WAL before it is ready, longer than pgserver's
    10 s on a build's data dir: the engine waits for a server still starting, and not for one that is gone."""
    import signal

    import pgserver
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    data = tmp_path / "pg"
    server = pgserver.get_server(str(data), cleanup_mode=None)
    first = PostmasterInfo.read_from_pgdata(data)
    os.kill(first.pid, signal.SIGINT)  # fast shutdown: the pid file goes with the server
    deadline = time.monotonic() + 30
    while (data / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    assert not postgres.wait_until_ready(data, 30) and time.monotonic() - started < 1
    # Started without waiting (as pg_ctl leaves one that outlived its timeout): waited for until it is ready.
    pg_ctl(
        ["-o", '-h ""', "-o", f"-k {first.socket_dir}", "-l", str(data / "log"), "start"],
        pgdata=data,
        user=server.system_user,
    )
    try:
        while not (data / "postmaster.pid").exists() and time.monotonic() < deadline + 30:
            time.sleep(0.01)  # written by the postmaster as it starts, "starting" until it is ready
        assert postgres.wait_until_ready(data, 60)
        info = PostmasterInfo.read_from_pgdata(data)
        assert info.status == "ready" and info.pid != first.pid
        with psycopg.connect(info.get_uri()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        os.kill(PostmasterInfo.read_from_pgdata(data).pid, signal.SIGINT)


def test_a_pickled_engine_is_one_on_the_same_server_with_connections_of_its_own(pg_engine):
    clone = pickle.loads(pickle.dumps(pg_engine))
    try:
        assert clone._server is None and clone._timeout_ms == pg_engine._timeout_ms
        with clone.connection() as mine, pg_engine.connection() as theirs:
            assert mine is not theirs
            pids = [c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in (mine, theirs)]
            assert pids[0] != pids[1]
            assert mine.info.port == theirs.info.port and mine.info.dbname == theirs.info.dbname
    finally:
        clone.close()
