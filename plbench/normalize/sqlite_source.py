"""Read a SQLite database into the neutral model by introspection (PRAGMA), not by re-parsing DDL.

SQLite is dynamically typed, so each column's family is decided from its declared
type (typemap.SOURCE_RULES) and then checked against the values it holds
(typemap.refine_family). Keys the data violates (duplicate or NULL primary-key
values) are dropped with a recorded decision rather than failing the load.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from plbench.normalize.schema import Column, ForeignKey, SourceDatabase, Table
from plbench.normalize.typemap import coerce, refine_family, source_family


def decode_text(raw: bytes) -> str:
    """SQLite TEXT as str; a few Spider files hold bytes that are not UTF-8 (kept, replaced)."""
    return raw.decode("utf-8", "replace")


def connect_readonly(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise FileNotFoundError(f"SQLite database {path} does not exist")
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    conn.text_factory = decode_text
    return conn


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table_names(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    return [r[0] for r in rows]


def _foreign_keys(
    conn: sqlite3.Connection,
    table: str,
    tables: dict[str, list[str]],
    pks: dict[str, tuple[str, ...]],
    decisions: list[dict],
) -> tuple[ForeignKey, ...]:
    groups: dict[int, list] = {}
    for row in conn.execute(f"PRAGMA foreign_key_list({_quote(table)})"):
        groups.setdefault(row[0], []).append(row)
    fks = []
    for rows in groups.values():
        ref = next((t for t in tables if t.lower() == rows[0][2].lower()), None)
        cols = tuple(r[3] for r in rows)
        refs = tuple(r[4] for r in rows) if all(r[4] for r in rows) else (pks.get(ref, ()) if ref else ())
        known = {c.lower() for c in tables.get(ref, [])}
        if ref is None or len(refs) != len(cols) or not all(c.lower() in known for c in refs):
            decisions.append(
                {
                    "table": table,
                    "decision": "foreign_key_dropped",
                    "detail": f"{cols} references {rows[0][2]}{refs}, which does not exist",
                }
            )
            continue
        fks.append(ForeignKey(cols, ref, refs))
    return tuple(fks)


def _primary_key(
    table: str, pk: tuple[str, ...], columns: list[Column], rows: list[tuple], decisions: list[dict]
) -> tuple[str, ...]:
    if not pk:
        return pk
    idx = [[c.name for c in columns].index(c) for c in pk]
    # Keys as loaded: values SQLite keeps apart (1 and '1' in an untyped column) may coincide after coercion.
    keys = [tuple(coerce(r[i], columns[i].family) for i in idx) for r in rows]
    if any(v is None for k in keys for v in k):
        why = "a primary-key column holds NULL"
    elif len(set(keys)) != len(keys):
        why = f"{len(keys) - len(set(keys))} duplicate primary-key value(s)"
    else:
        return pk
    decisions.append({"table": table, "decision": "primary_key_dropped", "detail": f"{pk}: {why}"})
    return ()


def read_sqlite(path: Path, source: str, name: str, origin: str, row_cap: int | None = None) -> SourceDatabase:
    """The database at `path`: schema by PRAGMA, every row (or the first `row_cap` per table)."""
    conn = connect_readonly(path)
    invalid: list[bytes] = []  # TEXT values that are not UTF-8: kept (replaced), and recorded below

    def text(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            invalid.append(raw)
            return decode_text(raw)

    conn.text_factory = text
    try:
        names = _table_names(conn)
        infos = {t: conn.execute(f"PRAGMA table_info({_quote(t)})").fetchall() for t in names}
        columns = {t: [r[1] for r in info] for t, info in infos.items()}
        declared_pks = {
            t: tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])) for t, info in infos.items()
        }
        decisions: list[dict] = []
        rows, tables = {}, []
        for t in names:
            seen = len(invalid)
            limit = f" LIMIT {int(row_cap)}" if row_cap is not None else ""
            rows[t] = conn.execute(
                f"SELECT * FROM {_quote(t)} ORDER BY rowid{limit}"
                if _has_rowid(conn, t)
                else f"SELECT * FROM {_quote(t)}{limit}"
            ).fetchall()
            if len(invalid) > seen:
                decisions.append(_invalid_utf8(origin, t, columns[t], rows[t], len(invalid) - seen))
            if row_cap is not None:
                decisions.append({"table": t, "decision": "row_cap", "detail": f"at most {row_cap} rows read"})
            tables.append(
                _table(
                    t,
                    infos[t],
                    rows[t],
                    declared_pks[t],
                    _foreign_keys(conn, t, columns, declared_pks, decisions),
                    decisions,
                )
            )
        return SourceDatabase(source, name, "sqlite", origin, tables, rows, decisions)
    finally:
        conn.close()


def _invalid_utf8(origin: str, table: str, columns: list[str], rows: list[tuple], count: int) -> dict:
    """A decision naming where TEXT values held bytes that are not UTF-8 (row = 1-based position read)."""
    where = [
        f"{columns[i]} row {n}"
        for n, row in enumerate(rows, start=1)
        for i, v in enumerate(row)
        if isinstance(v, str) and "\ufffd" in v
    ]
    shown = ", ".join(where[:10]) + (f" and {len(where) - 10} more" if len(where) > 10 else "")
    return {
        "table": table,
        "decision": "invalid_utf8_replaced",
        "detail": f"{origin}: {count} TEXT value(s) are not valid UTF-8, kept with U+FFFD for the bad bytes: {shown}",
    }


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {_quote(table)} LIMIT 0")
        return True
    except sqlite3.OperationalError:
        return False  # a WITHOUT ROWID table


def _table(
    name: str, info: list, rows: list[tuple], pk: tuple[str, ...], fks: tuple[ForeignKey, ...], decisions: list[dict]
) -> Table:
    cols = []
    for i, (_, col, declared, notnull, _default, _pk) in enumerate(info):
        declared = (declared or "").strip().upper()
        values = [r[i] for r in rows]
        family, rule = source_family("sqlite", declared)
        family, note = refine_family(family, rule, values)
        nullable = not notnull
        if notnull and any(v is None for v in values):
            nullable, note = True, (note + "; " if note else "") + "declared NOT NULL but holds NULL"
        cols.append(Column(col, declared, family, rule, nullable, note))
    return Table(name, tuple(cols), _primary_key(name, pk, cols, rows, decisions), fks)
