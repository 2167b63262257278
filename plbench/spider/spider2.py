"""Spider 2.0-Lite schema descriptions → the neutral model (`SourceDatabase`), with sample rows.

Spider 2.0-Lite ships no data for its BigQuery and Snowflake databases, only a
schema description per database: a `DDL.csv` and one JSON file per table
(`column_names`, `column_types`, up to 5 `sample_rows`). This module reads all
162 descriptions (30 SQLite, 74 BigQuery, 58 Snowflake) so that every one
normalizes to DDL PostgreSQL executes, loaded with its sample rows.

Decisions, each recorded on the database (`SourceDatabase.decisions`):

- Columns come from `DDL.csv` parsed with sqlglot in the source dialect; the
  declared type is the JSON's spelling when the JSON has the column (sqlglot
  re-spells types, e.g. Snowflake NUMBER(38,0) as DECIMAL(38, 0)). A DDL that
  does not parse (unquoted names like `14_DAY_TOTAL_SALES`) or is missing (six
  databases, and DEPS_DEV_V1's DDL.csv has no DDL column) falls back to the JSON.
- Tables only in DDL.csv are kept without rows; tables only in JSON are kept.
- Date-sharded tables (`ga_sessions_20170801`, ...) are all kept as they are:
  the gold queries name shards by wildcard, and every shard loads.
- A table is named by its bare name; when two datasets of one database hold the
  same name (after case folding), it becomes `<dataset>__<table>`.
- Sample values arrive as JSON-export spellings: numbers as strings, timestamps
  with offsets, pandas `NaT`, numpy array reprs for nested BigQuery values,
  `bytearray(b'..')` for Snowflake BINARY. `prepare_value` turns each into the
  Python value its family expects; what still does not fit widens the family
  (`typemap.refine_family`), which the column's note records.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import shutil
import sys
import tarfile
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path

import sqlglot
from sqlglot import exp

from plbench.buildlock import file_lock
from plbench.child_process import spawn_context
from plbench.normalize.schema import Column, ForeignKey, SourceDatabase, Table
from plbench.normalize.typemap import is_warehouse, refine_family, source_family
from plbench.raw_sources.fetch import sha256_file
from plbench.spider.spider2_values import nested_json, prepare_value

LITE_DIR = Path("spider2") / "spider2-lite"
DATABASES_DIR = LITE_DIR / "resource" / "databases"
ARCHIVES = ("bigquery", "snowflake")  # resource/databases/<name>.tar.gz, unpacked to <name>/
DIALECT_PREFIXES = (("local", "sqlite"), ("bq", "bigquery"), ("ga", "bigquery"), ("sf", "snowflake"))
_COMPLETE = ".complete"

csv.field_size_limit(sys.maxsize)  # some DDL cells hold thousands of columns


# ---- archives -----------------------------------------------------------------------------------


def unpack_archive(archive: Path, cache_dir: Path) -> Path:
    """Unpack `archive` once into `<cache_dir>/unpacked/<sha256[:16]>/` and return that folder.

    Keyed by content, so a changed archive unpacks afresh; the marker file is
    written last, so an interrupted unpack is redone instead of trusted. A process
    unpacking it (`unpack_ahead`'s child) holds its lock: another waits, then finds it done.
    """
    dest = cache_dir / "unpacked" / sha256_file(archive)[:16]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(dest.with_name(f"{dest.name}.lock")):
        if (dest / _COMPLETE).is_file():
            return dest
        tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")  # refuses absolute paths and links out of the folder
        (tmp / _COMPLETE).write_text(archive.name + "\n", encoding="utf-8")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def unpack_archives(raw_root: Path, cache_dir: Path) -> dict[str, Path]:
    """source dialect -> the folder holding one sub-folder per database (never beside the source)."""
    base = Path(raw_root) / DATABASES_DIR
    out = {"sqlite": base / "sqlite"}
    for name in ARCHIVES:
        out[name] = unpack_archive(base / f"{name}.tar.gz", Path(cache_dir)) / name
    return out


def unpack_ahead(raw_root: Path, cache_dir: Path) -> BaseProcess | None:
    """Start unpacking the archives under `raw_root` in a spawned child process, so that a first build unpacks
    them (3.6 s on one core) while it loads Dagster and its definitions; None where no child can be started.
    The child only goes ahead: the build unpacks as it always does, waiting on the archives' locks for the
    child and finding them done; what fails in the child (a missing archive), it meets and reports itself."""
    spawn = spawn_context()
    if spawn is None:
        return None
    child = spawn.Process(target=_unpack_quietly, args=(raw_root, cache_dir), name="plbench-unpack-ahead")
    child.start()
    return child


def _unpack_quietly(raw_root: Path, cache_dir: Path) -> None:
    with suppress(Exception, KeyboardInterrupt):  # the build meets the failure again and reports it; ^C is its
        unpack_archives(raw_root, cache_dir)


# ---- reading one table --------------------------------------------------------------------------


@dataclass
class RawTable:
    """One table as the description gives it, before names are made unique and types decided."""

    dataset: str  # the folder inside the database (BigQuery project.dataset, Snowflake schema; '' for SQLite)
    name: str  # bare table name
    fullname: str  # as the source qualifies it
    columns: list[tuple[str, str, bool]]  # (name, declared type, nullable)
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    rows: list[dict] | None = None  # sample rows; None when there is no JSON file
    notes: list[str] = field(default_factory=list)


def bare_name(name: str) -> str:
    """`DB.SCHEMA.TABLE`, `SCHEMA.TABLE` and `TABLE` (as DDL.csv and JSON variously write it) → TABLE."""
    return name.replace("`", "").replace('"', "").split(".")[-1]


def _ddl_type(kind: exp.DataType | None, dialect: str) -> str:
    return kind.sql(dialect=dialect).upper() if kind is not None else ""


def _column_def(col: exp.ColumnDef, dialect: str) -> tuple[str, str, bool, bool]:
    """(name, type, nullable, is primary key) of one column definition."""
    kinds = [c.args.get("kind") for c in col.constraints]
    nullable = not any(isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null") for k in kinds)
    pk = any(isinstance(k, exp.PrimaryKeyColumnConstraint) for k in kinds)
    return col.name, _ddl_type(col.args.get("kind"), dialect), nullable and not pk, pk


def _reference(ref: exp.Reference) -> tuple[str, tuple[str, ...]]:
    target = ref.this
    table = target.this if isinstance(target, exp.Schema) else target
    cols = tuple(c.name for c in target.expressions) if isinstance(target, exp.Schema) else ()
    return bare_name(table.name), cols


def _foreign_keys(schema: exp.Schema) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    out = []
    for item in schema.expressions:
        if isinstance(item, exp.ForeignKey) and item.args.get("reference"):
            out.append((tuple(c.name for c in item.expressions), *_reference(item.args["reference"])))
        if isinstance(item, exp.ColumnDef):
            for c in item.constraints:
                if isinstance(c.args.get("kind"), exp.Reference):
                    out.append(((item.name,), *_reference(c.args["kind"])))
    return out


def _parse_create(ddl: str, dialect: str) -> exp.Create:
    try:
        tree = sqlglot.parse_one(ddl, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(f"DDL does not parse: {str(exc).splitlines()[0]}") from exc
    if not isinstance(tree, exp.Create) or not isinstance(tree.this, exp.Schema):
        raise ValueError("DDL is not a CREATE TABLE with columns")
    return tree


@functools.lru_cache(maxsize=64)
def _parse_body(body: str, dialect: str) -> tuple[list, tuple[str, ...], list[ForeignKey]] | ValueError:
    """(columns, primary key, foreign keys) of a column list. Date shards repeat one column list hundreds
    of times (ga360: 366 nested STRUCT lists): it is parsed and its types written out once."""
    try:
        tree = _parse_create("CREATE TABLE t " + body, dialect)
    except ValueError as exc:
        return exc
    columns, pk = [], []
    for item in tree.this.expressions:
        if isinstance(item, exp.ColumnDef):
            name, type_sql, nullable, is_pk = _column_def(item, dialect)
            columns.append((name, type_sql, nullable))
            pk += [name] if is_pk else []
        elif isinstance(item, exp.PrimaryKey):
            pk = [c.name for c in item.expressions]
        elif isinstance(item, exp.Identifier):  # a SQLite column with no type
            columns.append((item.name, "", True))
    if not columns:
        return ValueError("DDL declares no columns")
    return columns, tuple(pk), [ForeignKey(c, t, r) for c, t, r in _foreign_keys(tree.this)]


def _table_name(header: str, dialect: str) -> exp.Table:
    return _parse_create(header + " (x INT)", dialect).this.this


def parse_ddl(ddl: str, dialect: str) -> RawTable:
    """A CREATE [OR REPLACE] TABLE statement → RawTable (no rows); raises ValueError when it does not parse."""
    start = ddl.find("(")
    if start < 0:
        raise ValueError("DDL has no column list")
    parsed = _parse_body(ddl[start:], dialect)
    if isinstance(parsed, ValueError):
        raise parsed
    columns, pk, fks = parsed
    table = _table_name(ddl[:start], dialect)
    fullname = ".".join(p for p in (table.catalog, table.db, table.name) if p)
    return RawTable("", table.name, fullname, list(columns), pk, list(fks))


def read_table_json(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def _table_from_json(doc: dict) -> RawTable:
    cols = [(n, t.strip().upper(), True) for n, t in zip(doc["column_names"], doc["column_types"])]
    return RawTable(
        "",
        bare_name(doc["table_name"]),
        doc.get("table_fullname") or doc["table_name"],
        cols,
        rows=list(doc.get("sample_rows") or []),
    )


def _merge(ddl: RawTable, doc: dict) -> RawTable:
    """DDL columns (order, NOT NULL, keys) typed with the JSON's spelling; JSON-only columns appended."""
    json_types = {n.lower(): t.strip().upper() for n, t in zip(doc["column_names"], doc["column_types"])}
    cols = [(n, json_types.get(n.lower(), t), nullable) for n, t, nullable in ddl.columns]
    known = {n.lower() for n, _, _ in cols}
    extra = [
        (n, t.strip().upper(), True) for n, t in zip(doc["column_names"], doc["column_types"]) if n.lower() not in known
    ]
    ddl.columns = cols + extra
    ddl.rows = list(doc.get("sample_rows") or [])
    if extra:
        ddl.notes.append(f"{len(extra)} column(s) only in the JSON description: {[n for n, _, _ in extra][:5]}")
    return ddl


# ---- reading one dataset folder -----------------------------------------------------------------


def read_ddl_csv(path: Path) -> dict[str, tuple[str, str]]:
    """bare lower-cased table name -> (name as written, DDL text or '').

    The header differs by source: `table_name,DDL` (SQLite), `table_name,ddl`
    (BigQuery), `table_name,description,DDL` (Snowflake), and one Snowflake file
    has `table_name,description` only.
    """
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        ddl_key = next((k for k in reader.fieldnames or () if k.lower() == "ddl"), None)
        return {
            bare_name(r["table_name"]).lower(): (r["table_name"], (r.get(ddl_key) or "") if ddl_key else "")
            for r in reader
        }


def _from_ddl(text: str, dialect: str, notes: list[str]) -> RawTable | None:
    if not text.strip():
        notes.append("no DDL text")
        return None
    try:
        return parse_ddl(text, dialect)
    except ValueError as exc:
        notes.append(str(exc))
        return None


def read_dataset(folder: Path, dialect: str) -> tuple[list[RawTable], list[dict]]:
    """Every table of one dataset folder: the JSON files, completed by and completing DDL.csv."""
    ddl_file = folder / "DDL.csv"
    ddls = read_ddl_csv(ddl_file) if ddl_file.is_file() else {}
    decisions = [] if ddls else [{"decision": "no_ddl_csv", "detail": f"{folder.name}: columns from the JSON files"}]
    tables, seen = [], set()
    for path in sorted(folder.glob("*.json")):
        doc = read_table_json(path)
        key, notes = bare_name(doc["table_name"]).lower(), []
        parsed = _from_ddl(ddls[key][1], dialect, notes) if key in ddls else None
        table = _merge(parsed, doc) if parsed else _table_from_json(doc)
        table.fullname = doc.get("table_fullname") or table.fullname
        table.notes += [f"columns from the JSON description: {n}" for n in notes]
        tables.append(table)
        seen.add(key)
    for key, (written, text) in sorted(ddls.items()):
        if key in seen:
            continue
        notes: list[str] = []
        parsed = _from_ddl(text, dialect, notes)
        if parsed is None:
            decisions.append(
                {
                    "table": written,
                    "decision": "table_dropped",
                    "detail": f"in DDL.csv only, and its DDL gives no columns: {notes[0]}",
                }
            )
            continue
        parsed.notes.append("in DDL.csv only: no sample rows")
        tables.append(parsed)
    for t in tables:
        t.dataset = folder.name if is_warehouse(dialect) else ""
    return tables, decisions


# ---- one database -------------------------------------------------------------------------------


def _row_value(row: dict, name: str, lower: dict[str, str]):
    if name in row:
        return row[name]
    key = lower.get(name.lower())
    return row[key] if key is not None else None


def _nested_values(raw: list) -> tuple[list, list[str]]:
    pairs = [nested_json(v) if v is not None else (None, True) for v in raw]
    kept = sum(1 for _, parsed in pairs if not parsed)
    return [text for text, _ in pairs], [
        f"{kept} nested value(s) are no JSON or Python repr: kept as JSON strings"
    ] if kept else []


def _column(name: str, declared: str, nullable: bool, raw: list, dialect: str) -> tuple[Column, list]:
    """The column with its family decided on its prepared sample values, and those values."""
    family, rule = source_family(dialect, declared)
    if family == "json" and is_warehouse(dialect):
        values, notes = _nested_values(raw)
    else:
        values, notes = [prepare_value(v, family, dialect) for v in raw], []
    refined, note = refine_family(family, rule, values)
    notes += [note] if note else []
    if not nullable and any(v is None for v in values):
        nullable = True
        notes.append("declared NOT NULL but a sample holds NULL")
    return Column(name, declared, refined, rule, nullable, "; ".join(notes)), values


def _primary_key(
    raw: RawTable, columns: list[Column], rows: list[tuple], decisions: list[dict], name: str
) -> tuple[str, ...]:
    names = [c.name.lower() for c in columns]
    if not raw.primary_key or any(c.lower() not in names for c in raw.primary_key):
        if raw.primary_key:
            decisions.append(
                {
                    "table": name,
                    "decision": "primary_key_dropped",
                    "detail": f"{raw.primary_key}: names a column the table does not have",
                }
            )
        return ()
    idx = [names.index(c.lower()) for c in raw.primary_key]
    keys = [tuple(r[i] for i in idx) for r in rows]
    if any(v is None for k in keys for v in k) or len(set(map(str, keys))) != len(keys):
        decisions.append(
            {
                "table": name,
                "decision": "primary_key_dropped",
                "detail": f"{raw.primary_key}: sample rows hold NULL or duplicate keys",
            }
        )
        return ()
    return raw.primary_key


def build_table(raw: RawTable, name: str, dialect: str, decisions: list[dict]) -> tuple[Table, list[tuple]]:
    """RawTable → Table and its rows (column order), families decided on the sample values."""
    samples = [r for r in (raw.rows or []) if isinstance(r, dict)]
    lowers = [{k.lower(): k for k in r} for r in samples]
    columns, by_column = [], []
    for col_name, declared, nullable in raw.columns:
        raw_values = [_row_value(r, col_name, low) for r, low in zip(samples, lowers)]
        column, values = _column(col_name, declared, nullable, raw_values, dialect)
        columns.append(column)
        by_column.append(values)
    rows = [tuple(vals[i] for vals in by_column) for i in range(len(samples))]
    pk = _primary_key(raw, columns, rows, decisions, name)
    return Table(name, tuple(columns), pk), rows


def unique_table_names(tables: list[RawTable]) -> list[str]:
    """Bare names, or `<dataset>__<name>` for names two datasets share; unique after case folding."""
    counts: dict[str, int] = {}
    for t in tables:
        counts[t.name.lower()] = counts.get(t.name.lower(), 0) + 1
    names, taken = [], set()
    for t in tables:
        name = t.name if counts[t.name.lower()] == 1 else f"{t.dataset.split('.')[-1]}__{t.name}"
        base, n = name, 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name.lower())
        names.append(name)
    return names


def _foreign_keys_of(raw: RawTable, names: dict[str, Table], decisions: list[dict], name: str) -> tuple:
    """The declared foreign keys whose tables and columns exist (SQLite DDL only declares them)."""
    fks = []
    for fk in raw.foreign_keys:
        ref = names.get(fk.ref_table.lower())
        ref_cols = fk.ref_columns or (ref.primary_key if ref else ())
        have = {c.name.lower() for c in names[name.lower()].columns}
        ok = (
            ref is not None
            and len(ref_cols) == len(fk.columns)
            and all(c.lower() in have for c in fk.columns)
            and all(c.lower() in {x.name.lower() for x in ref.columns} for c in ref_cols)
        )
        if not ok:
            decisions.append(
                {
                    "table": name,
                    "decision": "foreign_key_dropped",
                    "detail": f"{fk.columns} -> {fk.ref_table}{fk.ref_columns}: no such table or columns",
                }
            )
            continue
        fks.append(ForeignKey(fk.columns, ref.name, tuple(ref_cols)))
    return tuple(fks)


def dataset_folders(folder: Path) -> list[Path]:
    """The folders holding DDL.csv / JSON files: the database folder itself (SQLite) or its sub-folders."""
    if any(folder.glob("*.json")) or (folder / "DDL.csv").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if p.is_dir())


def read_database(folder: Path, dialect: str, name: str, origin: str) -> SourceDatabase:
    """One schema description (all its dataset folders) → SourceDatabase with its sample rows."""
    raws, decisions = [], []
    for sub in dataset_folders(folder):
        tables, found = read_dataset(sub, dialect)
        raws += tables
        decisions += found
    names = unique_table_names(raws)
    tables, rows, by_name = [], {}, {}
    for raw, tname in zip(raws, names):
        table, table_rows = build_table(raw, tname, dialect, decisions)
        by_name[tname.lower()] = table
        rows[tname] = table_rows
        decisions.append(
            {
                "table": tname,
                "decision": "table_origin",
                "dataset": raw.dataset,
                "source_table": raw.name,
                "fullname": raw.fullname,
                "detail": "; ".join(raw.notes),
            }
        )
    for raw, tname in zip(raws, names):
        table = by_name[tname.lower()]
        fks = _foreign_keys_of(raw, by_name, decisions, tname)
        tables.append(Table(tname, table.columns, table.primary_key, fks) if fks else table)
    return SourceDatabase("spider2_lite", name, dialect, origin, tables, rows, decisions)


def database_folders(roots: dict[str, Path]) -> list[tuple[str, str, Path]]:
    """(dialect, database name, folder) for every schema description, in a stable order."""
    return [
        (source, p.name, p)
        for source in ("sqlite", "bigquery", "snowflake")
        for p in sorted(roots[source].iterdir())
        if p.is_dir()
    ]
