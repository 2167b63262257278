"""OracleEngine: connect bounds, DSN and error parsing always; execution against PLBENCH_ORACLE_DSN."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from plbench.engines.base import EngineUnavailable
from plbench.engines.oracle import OracleEngine, created_unit, error_code, parse_dsn, strip_terminator

ORACLE_DSN = os.environ.get("PLBENCH_ORACLE_DSN")
needs_oracle = pytest.mark.skipif(not ORACLE_DSN, reason="PLBENCH_ORACLE_DSN is not set: no Oracle server configured")


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never answers; yields its port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []

    def accept_forever() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            accepted.append(conn)

    threading.Thread(target=accept_forever, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in accepted:  # lets the abandoned connect thread finish
        conn.close()


def test_connect_to_a_silent_server_is_bounded(silent_server):
    started = time.monotonic()
    expected = rf"127\.0\.0\.1:{silent_server} did not answer within 1\.5 s"
    with pytest.raises(EngineUnavailable, match=expected):
        OracleEngine.connect(f"scott/tiger@127.0.0.1:{silent_server}/FREEPDB1", connect_timeout_s=1.5)
    elapsed = time.monotonic() - started
    assert 1.4 <= elapsed < 1.5 + 2


def test_connect_to_a_closed_port_fails_fast():
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    started = time.monotonic()
    expected = rf"cannot connect to Oracle at 127\.0\.0\.1:{port}/XE \(DPY-6005\)"
    with pytest.raises(EngineUnavailable, match=expected):
        OracleEngine.connect(f"scott/tiger@127.0.0.1:{port}/XE", connect_timeout_s=5)
    assert time.monotonic() - started < 2


def test_a_bad_dsn_is_engine_unavailable():
    with pytest.raises(EngineUnavailable, match="bad Oracle DSN"):
        OracleEngine.connect("scott/tiger@nohost-no-service")
    with pytest.raises(EngineUnavailable, match="no Oracle user"):
        OracleEngine.connect("localhost:1521/FREEPDB1")


def test_parse_dsn():
    dsn = parse_dsn("scott/tiger@db.example.com:1522/FREEPDB1")
    assert (dsn.user, dsn.password, dsn.host, dsn.port, dsn.service_name) == (
        "scott",
        "tiger",
        "db.example.com",
        1522,
        "FREEPDB1",
    )
    assert dsn.address == "db.example.com:1522/FREEPDB1"
    # The password may contain '@' and '/'; the port defaults to 1521.
    dsn = parse_dsn("app/p@ss/w@localhost/XEPDB1")
    assert (dsn.user, dsn.password, dsn.host, dsn.port, dsn.service_name) == (
        "app",
        "p@ss/w",
        "localhost",
        1521,
        "XEPDB1",
    )
    # A bare EZConnect string (credentials given separately), with options.
    dsn = parse_dsn("//[::1]:1521/svc?transport_connect_timeout=3")
    assert (dsn.user, dsn.host, dsn.port, dsn.service_name) == (None, "::1", 1521, "svc")
    for bad in ("scott/tiger@host:port/svc", "nohost-no-service", "scott@host:1521/svc", "host:1521/"):
        with pytest.raises(ValueError):
            parse_dsn(bad)


def test_error_code():
    message = "ORA-06550: line 1, column 7:\nPLS-00201: identifier 'X' must be declared"
    assert error_code(message) == "PLS-00201"
    assert error_code("ORA-00942: table or view does not exist") == "ORA-00942"
    assert error_code("ORA-20001: custom failure\nORA-06512: at line 3") == "ORA-20001"
    assert error_code("DPY-4024: call timeout of 500 ms exceeded") == "DPY-4024"
    assert error_code("something else") == ""


def test_created_unit():
    assert created_unit("CREATE OR REPLACE FUNCTION add1(x NUMBER) RETURN NUMBER") == ("FUNCTION", "ADD1")
    assert created_unit("create or replace editionable package body util as ...") == ("PACKAGE BODY", "UTIL")
    assert created_unit('CREATE TYPE "MixedCase" AS OBJECT (a NUMBER)') == ("TYPE", "MixedCase")
    assert created_unit("CREATE TYPE BODY scott.point AS ...") == ("TYPE BODY", "POINT")
    assert created_unit("CREATE TABLE t (x NUMBER)") is None
    assert created_unit("BEGIN NULL; END;") is None


def test_strip_terminator():
    assert strip_terminator("BEGIN NULL; END;\n/\n") == "BEGIN NULL; END;"
    assert strip_terminator("SELECT 4 / 2 FROM dual") == "SELECT 4 / 2 FROM dual"
    # the normalized scripts end SQL statements with ";", which the server refuses (ORA-00933/ORA-00911)
    assert strip_terminator("CREATE TABLE T (\n  ID NUMBER(19)\n);") == "CREATE TABLE T (\n  ID NUMBER(19)\n)"
    assert strip_terminator("INSERT ALL\n  INTO T (ID) VALUES (1)\nSELECT 1 FROM DUAL;") == (
        "INSERT ALL\n  INTO T (ID) VALUES (1)\nSELECT 1 FROM DUAL"
    )
    assert strip_terminator("INSERT INTO T (S) VALUES ('a;')") == "INSERT INTO T (S) VALUES ('a;')"
    # PL/SQL keeps the ";" that ends its last END
    assert strip_terminator("begin sp_x(1); end;") == "begin sp_x(1); end;"
    assert strip_terminator("DECLARE n NUMBER; BEGIN NULL; END;") == "DECLARE n NUMBER; BEGIN NULL; END;"
    unit = "CREATE OR REPLACE PROCEDURE sp_x(para_n IN NUMBER)\nIS\nBEGIN\n  NULL;\nEND sp_x;"
    assert strip_terminator(unit) == unit


# --- against a real Oracle server -------------------------------------------------------


@pytest.fixture(scope="module")
def ora_engine():
    engine = OracleEngine.connect(ORACLE_DSN, connect_timeout_s=10, statement_timeout_s=2)
    yield engine
    engine.close()


@needs_oracle
def test_version(ora_engine):
    assert ora_engine.version().startswith("Oracle ")


@needs_oracle
def test_dbms_output_is_captured(ora_engine):
    with ora_engine.session() as session:
        result = session.execute(
            "BEGIN dbms_output.put_line('one'); dbms_output.put_line(NULL); dbms_output.put_line('three'); END;"
        )
        assert result.ok, result
        assert result.lines == ["one", "", "three"]
        many = session.execute("BEGIN FOR i IN 1..250 LOOP dbms_output.put_line('n' || i); END LOOP; END;")
        assert many.lines == [f"n{i}" for i in range(1, 251)]


@needs_oracle
def test_compile_error_gives_the_pls_code(ora_engine):
    with ora_engine.session() as session:
        result = session.execute("CREATE FUNCTION plb_bad RETURN NUMBER IS BEGIN RETURN nope; END;")
        assert result.error is not None and result.error.code == "PLS-00201"
        assert "line 1" in result.error.message
        block = session.execute("BEGIN nope; END;")
        assert block.error.code == "PLS-00201"
        assert session.execute("BEGIN dbms_output.put_line('still fine'); END;").lines == ["still fine"]


@needs_oracle
def test_runtime_error_gives_the_ora_code(ora_engine):
    with ora_engine.session() as session:
        result = session.execute("BEGIN raise_application_error(-20001, 'boom'); END;")
        assert result.error.code == "ORA-20001"


@needs_oracle
def test_statement_timeout(ora_engine):
    with ora_engine.session() as session:
        result = session.execute("BEGIN dbms_session.sleep(5); END;")
        assert result.timed_out
        assert session.execute("BEGIN dbms_output.put_line('after'); END;").lines == ["after"]


@needs_oracle
def test_session_drops_what_it_created(ora_engine):
    with ora_engine.session() as session:
        assert session.execute("CREATE TYPE plb_point AS OBJECT (x NUMBER, y NUMBER)").ok
        assert session.execute("CREATE TABLE plb_points (p plb_point)").ok
        assert session.execute("CREATE FUNCTION plb_one RETURN NUMBER IS BEGIN RETURN 1; END;").ok
    with ora_engine.session() as session:
        result = session.execute(
            "DECLARE n NUMBER; BEGIN SELECT count(*) INTO n FROM user_objects"
            " WHERE object_name IN ('PLB_POINT', 'PLB_POINTS', 'PLB_ONE'); dbms_output.put_line(n); END;"
        )
        assert result.lines == ["0"]


@needs_oracle
def test_a_spider_database_loads_on_oracle_and_its_gold_queries_compare(ora_engine, tmp_path):
    """The Oracle half of normalization: the emitted DDL and INSERT ALL batches load, row counts match,
    and the Oracle texts of the gold queries return the SQLite results (run only with a server)."""
    from plbench.normalize.emit import normalize
    from plbench.normalize.load import load_oracle
    from plbench.normalize.sqlite_source import read_sqlite
    from plbench.spider.gold import GoldQuery, check_database
    from tests.fixtures import SPIDER_DEV, write_spider1

    write_spider1(tmp_path)
    path = tmp_path / "spider/database/shop/shop.sqlite"
    source = read_sqlite(path, "spider1", "shop", "shop.sqlite")
    db = normalize(source, "oracle")
    queries = [GoldQuery(str(i), d, q, sql, "dev") for i, (d, q, sql) in enumerate(SPIDER_DEV) if d == "shop"]
    with ora_engine.session() as session:
        report = load_oracle(session, db)
        assert report.loaded and report.verified, report.error or report.mismatches()
        results = check_database(path, normalize(source, "postgres"), queries, session, oracle=db, target="oracle")
    classes = {r.query.source_id: r.cls for r in results}
    assert classes["0"] == classes["1"] == "identical" and classes["7"] == "source_error"
