"""Emit a SourceDatabase as DDL and data for one target dialect.

The output (`NormalizedDatabase`) holds the target name of every table and column,
the CREATE TABLE statements, the constraints added after the data (foreign keys
as NOT VALID / ENABLE NOVALIDATE: Spider data has dangling references), the rows
coerced to the target types, and every mapping decision with its reason.

The dialect object decides column types, names, stored values and the data script; where
it stores '' as NULL (Oracle), an empty string loads as NULL (counted per column) and a NOT NULL
or key column holding one loses that constraint.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from plbench.dialects import DIALECTS, Dialect
from plbench.file_cells import FileCell
from plbench.normalize.schema import Column, SourceDatabase, Table
from plbench.normalize.typemap import RULE_REASONS, IdentifierMap, TargetName, coerce_column, namespace_targets


@dataclass(frozen=True)
class NormalizedColumn:
    source: Column
    target: TargetName
    type_sql: str


@dataclass
class NormalizedTable:
    source: Table
    target: TargetName
    columns: list[NormalizedColumn]
    rows: list[tuple]  # values coerced for this dialect
    # The rows in the dialect's bulk-load text, made once (`PostgresDialect.copy_text`): data.sql embeds it and
    # the load streams it, seconds of a build apart on the same rows.
    data_text: str | None = field(default=None, repr=False, compare=False)

    @property
    def column_names(self) -> list[str]:
        return [c.target.sql for c in self.columns]


@dataclass
class NormalizedDatabase:
    source: str
    name: str
    dialect: str
    schema_name: str  # where the database is loaded (PostgreSQL schema / Oracle user)
    tables: list[NormalizedTable]
    create_statements: list[str]
    constraint_statements: list[str]
    decisions: list[dict] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.source}/{self.name}"

    def table(self, source_name: str) -> NormalizedTable:
        for t in self.tables:
            if t.source.name.lower() == source_name.lower():
                return t
        raise KeyError(f"{self.key} has no table {source_name}")

    def row_counts(self) -> dict[str, int]:
        return {t.target.name: len(t.rows) for t in self.tables}

    def ddl_text(self) -> str:
        return "\n\n".join(self.create_statements + self.constraint_statements) + "\n"


def schema_name(source: str, name: str) -> str:
    """A deterministic, plain identifier for the database's schema in the target."""
    plain = "".join(ch if ch.isalnum() else "_" for ch in name.lower())
    full = f"{'s1' if source == 'spider1' else 's2'}_{plain}"
    return full if len(full) <= 60 else f"{full[:50]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def _max_text_bytes(values: list) -> int:
    """The longest text's length in UTF-8 bytes. Only a text of at least a quarter of the longest
    one's characters can hold more bytes (4 at most a character): those are the ones measured, and
    only those not ASCII encoded (`isascii` reads a flag of the string; an ASCII text's bytes are its characters)."""
    types = set(map(type, values))
    if not any(issubclass(t, str) for t in types):
        return 0
    texts = (
        [v for v in values if v is not None]
        if types <= {str, type(None)}
        else [v for v in values if isinstance(v, str)]
    )
    longest = max(map(len, texts), default=0)
    return max((len(v) if v.isascii() else len(v.encode()) for v in texts if 4 * len(v) >= longest), default=0)


def _columns(rows: list[tuple], width: int) -> list[list]:
    return [list(c) for c in zip(*rows)] if rows else [[] for _ in range(width)]


def _rows(columns: list[list], count: int) -> list[tuple]:
    return list(zip(*columns)) if columns else [()] * count


def _column_decision(db: SourceDatabase, table: NormalizedTable, col: NormalizedColumn, dialect: str) -> dict:
    src = col.source
    return {
        "database": db.key,
        "table": table.source.name,
        "target_table": table.target.name,
        "column": src.name,
        "source_type": src.source_type,
        "family": src.family,
        "rule": src.rule,
        "rule_reason": RULE_REASONS.get(src.rule, ""),
        "note": src.note,
        "dialect": dialect,
        "target_name": col.target.name,
        "target_type": col.type_sql,
        "renamed": col.target.why,
    }


def normalize(db: SourceDatabase, dialect: str) -> NormalizedDatabase:
    """The database's DDL, constraints and coerced rows in `dialect`, with every decision recorded."""
    target = DIALECTS[dialect]
    sized = target.sized_families  # only their columns' texts are measured
    table_names = IdentifierMap(dialect)
    tables, decisions = [], [dict(d, database=db.key, dialect=dialect) for d in db.decisions]
    for table in db.tables:  # column by column: most columns need no per-value work (coerce_column)
        source_rows = db.rows.get(table.name, [])
        values = _columns(source_rows, len(table.columns))
        values = [coerce_column(v, c.family) for v, c in zip(values, table.columns)]
        table, values = _fold_wide_table(db, table, values, decisions)
        if target.empty_string_is_null:
            table = _empty_string_constraints(db, table, values, decisions, target)
        names = namespace_targets(dialect, tuple(col.name for col in table.columns))
        cols = [
            NormalizedColumn(
                col, name, target.column_type(col.family, _max_text_bytes(v) if col.family in sized else 0)
            )
            for v, col, name in zip(values, table.columns, names)
        ]
        target_rows = _rows([target.stored_column(v) for v in values], len(source_rows))
        ntable = NormalizedTable(table, table_names.add(table.name), cols, target_rows)
        tables.append(ntable)
        decisions += [_column_decision(db, ntable, c, dialect) for c in cols]
        decisions += _empty_strings(db, ntable, values, target) if target.empty_string_is_null else []
    out = NormalizedDatabase(db.source, db.name, dialect, schema_name(db.source, db.name), tables, [], [], decisions)
    out.create_statements = [_create_table(t) for t in tables]
    out.constraint_statements = _foreign_keys(out, target)
    return out


MAX_COLUMNS = 600  # Oracle allows 1,000 columns; a PostgreSQL row must fit 8 KB (1,270 numbers do not)
OVERFLOW_COLUMN = "overflow_columns"


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # JSON has no NaN or Infinity: "nan", "inf"
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v) if v.is_finite() else str(v)
    if isinstance(v, bytes):
        return v.hex()
    return v


def _fold_wide_table(
    db: SourceDatabase, table: Table, values: list[list], decisions: list[dict]
) -> tuple[Table, list[list]]:
    """A table over MAX_COLUMNS keeps its first columns; the rest become one JSON object column."""
    if len(table.columns) <= MAX_COLUMNS:
        return table, values
    keep = MAX_COLUMNS - 1
    moved = table.columns[keep:]
    overflow = Column(
        OVERFLOW_COLUMN,
        "",
        "json",
        "wide_table_overflow",
        True,
        f"columns {moved[0].name} .. {moved[-1].name} ({len(moved)}) as one JSON object",
    )
    folded = [
        json.dumps(
            {c.name: _json_value(v) for c, v in zip(moved, row) if v is not None}, ensure_ascii=False, sort_keys=True
        )
        for row in zip(*values[keep:])
    ]
    kept = {c.name.lower() for c in table.columns[:keep]}
    pk = table.primary_key if all(c.lower() in kept for c in table.primary_key) else ()
    fks = tuple(fk for fk in table.foreign_keys if all(c.lower() in kept for c in fk.columns))
    decisions.append(
        {
            "database": db.key,
            "table": table.name,
            "decision": "wide_table_overflow",
            "detail": f"{len(table.columns)} columns: the last {len(moved)} are keys of the JSON "
            f"column {OVERFLOW_COLUMN}" + ("" if pk == table.primary_key else "; the primary key is not kept"),
        }
    )
    return Table(table.name, table.columns[:keep] + (overflow,), pk, fks), values[:keep] + [folded]


def _empty_string_constraints(
    db: SourceDatabase, table: Table, values: list[list], decisions: list[dict], target: Dialect
) -> Table:
    """'' loads as NULL: a NOT NULL or primary-key column holding '' loses that constraint."""
    empty = {c.name.lower() for c, v in zip(table.columns, values) if "" in v}
    if not empty:
        return table
    why = f"holds '', which is NULL in {target.display_name}"
    cols = tuple(
        replace(c, nullable=True, note=(c.note + "; " if c.note else "") + f"declared NOT NULL but {why}")
        if c.name.lower() in empty and not c.nullable
        else c
        for c in table.columns
    )
    pk = table.primary_key
    if any(c.lower() in empty for c in pk):
        decisions.append(
            {
                "database": db.key,
                "table": table.name,
                "dialect": target.name,
                "decision": "primary_key_dropped",
                "detail": f"{pk}: a primary-key column {why}",
            }
        )
        pk = ()
    return replace(table, columns=cols, primary_key=pk)


def _empty_strings(db: SourceDatabase, table: NormalizedTable, values: list[list], target: Dialect) -> list[dict]:
    out = []
    for col, column in zip(table.columns, values):
        n = column.count("")
        if n:
            out.append(
                {
                    "database": db.key,
                    "table": table.source.name,
                    "column": col.source.name,
                    "dialect": target.name,
                    "decision": "empty_string_is_null",
                    "detail": f"{n} empty string(s) load as NULL in {target.display_name}",
                }
            )
    return out


def _create_table(table: NormalizedTable) -> str:
    lines = []
    for col in table.columns:
        null = "" if col.source.nullable else " NOT NULL"
        check = f" CHECK ({col.target.sql} IS JSON)" if col.type_sql == "CLOB" and col.source.family == "json" else ""
        lines.append(f"  {col.target.sql} {col.type_sql}{null}{check}")
    if table.source.primary_key:
        names = ", ".join(_column(table, c).target.sql for c in table.source.primary_key)
        lines.append(f"  PRIMARY KEY ({names})")
    return f"CREATE TABLE {table.target.sql} (\n" + ",\n".join(lines) + "\n);"


def _column(table: NormalizedTable, source_name: str) -> NormalizedColumn:
    for col in table.columns:
        if col.source.name.lower() == source_name.lower():
            return col
    raise KeyError(f"table {table.source.name} has no column {source_name}")


def _undeclarable(table: NormalizedTable, ref: NormalizedTable, fk) -> str:
    """Why the target would refuse this foreign key ('' when it accepts it)."""
    if tuple(c.lower() for c in fk.ref_columns) != tuple(c.lower() for c in ref.source.primary_key):
        return "the referenced columns are not its primary key"
    types = [(_column(table, a).type_sql, _column(ref, b).type_sql) for a, b in zip(fk.columns, fk.ref_columns)]
    if any(a != b for a, b in types):
        return f"column types differ after mapping ({types})"
    return ""


def _foreign_keys(db: NormalizedDatabase, target: Dialect) -> list[str]:
    """Foreign keys onto a primary key, added after the data without checking existing rows."""
    statements = []
    for table in db.tables:
        for n, fk in enumerate(table.source.foreign_keys, start=1):
            ref = db.table(fk.ref_table)
            why = _undeclarable(table, ref, fk)
            if why:
                db.decisions.append(
                    {
                        "database": db.key,
                        "table": table.source.name,
                        "dialect": target.name,
                        "decision": "foreign_key_not_declared",
                        "detail": f"{fk.columns} -> {fk.ref_table}{fk.ref_columns}: {why}",
                    }
                )
                continue
            cols = ", ".join(_column(table, c).target.sql for c in fk.columns)
            refs = ", ".join(_column(ref, c).target.sql for c in fk.ref_columns)
            name = IdentifierMap(target.name).add(f"fk_{table.target.name}_{n}").sql
            statements.append(
                f"ALTER TABLE {table.target.sql} ADD CONSTRAINT {name} FOREIGN KEY ({cols}) "
                f"REFERENCES {ref.target.sql} ({refs}){target.unchecked_foreign_key};"
            )
    return statements


# ---- files -------------------------------------------------------------------------------------


def data_script(db: NormalizedDatabase) -> str:
    """The data as a script: COPY ... FROM stdin blocks (psql) for PostgreSQL, INSERT ALL for Oracle."""
    target = DIALECTS[db.dialect]
    return "".join(target.data_script(table) for table in db.tables if table.rows)


# One encoder for every decision, as json.dumps(d, sort_keys=True, default=str) encodes it: json's C
# encoder made once (JSONEncoder.encode makes one a call; Spider 2.0: ~540,000 calls), ensure_ascii and
# allow_nan as JSONEncoder's defaults, without circular-reference markers (None): decisions hold no cycles,
# and one shared markers dict would see a rule row that two threads encode at once (normalize_databases'
# PostgreSQL threads) as a cycle.
_DECISION_ENCODER = json.encoder.c_make_encoder(
    None, str, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, True
)


def _decision_json(decision: dict) -> str:
    return "".join(_DECISION_ENCODER(decision, 0))


def decisions_json(decisions: list[dict]) -> str:
    """One decision per line, keys sorted: as readable as an indented dump, and written by json's C
    encoder (an indent makes json fall back to its pure-Python one, seconds on Spider 2.0's wide
    schemas). `DecisionsFile.render` makes the release's one-line form of it."""
    return "[\n" + ",\n".join(map(_decision_json, decisions)) + "\n]\n"


@dataclass(frozen=True)
class DecisionsFile(FileCell):
    """A database's decisions.json as databases.parquet holds it: the list on one line, as
    `json.dumps(decisions, sort_keys=True)` writes it. Decisions hold no raw newline (JSON escapes
    it), so the file's ",\n" are exactly the separators between decisions."""

    def render(self, text: str) -> str:
        return "[" + text[2:-3].replace(",\n", ", ") + "]"

    def lines(self) -> list[str]:
        """One encoded decision a line (`decisions_with` decodes those it needs)."""
        return self.read_text().split("\n")[1:-2]


def decisions_with(lines: list[str], key: str, value: str) -> list[dict]:
    """The decisions among `lines` (DecisionsFile.lines) whose `key` is `value`: only the lines holding that
    pair as the encoder writes it are decoded (a wide schema's decisions run to tens of MB, one a column)."""
    pair = _decision_json({key: value})[1:-1]
    found = (json.loads(line.removesuffix(",")) for line in lines if pair in line)
    return [d for d in found if d.get(key) == value]


def write_files(db: NormalizedDatabase, root: Path) -> dict[str, str]:
    """schema.sql, data.sql and constraints.sql (run in that order: NOT VALID / ENABLE NOVALIDATE
    foreign keys still check rows inserted after them, and Spider data has dangling references)
    under root/<source>/<db>/<dialect>/; returns relative path -> sha256."""
    folder = root / db.source / db.name / db.dialect
    folder.mkdir(parents=True, exist_ok=True)
    sums = {}
    for name, text in (
        ("schema.sql", "\n\n".join(db.create_statements) + "\n"),
        ("data.sql", data_script(db)),
        ("constraints.sql", "\n\n".join(db.constraint_statements) + "\n"),
        ("decisions.json", decisions_json(db.decisions)),
    ):
        path, data = folder / name, text.encode()  # encoded once, for the file and its checksum
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        sums[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return sums
