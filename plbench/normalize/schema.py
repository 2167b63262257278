"""The dialect-neutral schema and row model every source database is read into.

A `SourceDatabase` holds what the source says (declared types, keys, rows as
Python values); `plbench.normalize.typemap` decides, per column, the neutral
type family and the target type in each dialect, and records why.

Row values are Python values: None, int, float, Decimal, str, bytes, bool,
datetime.date / datetime.datetime / datetime.time, or (for the json family)
already-serialised JSON text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The neutral type families. Each maps to one column type per target dialect (Dialect.column_types).
FAMILIES = ("integer", "decimal", "float", "text", "boolean", "date", "timestamp", "time", "binary", "json")


@dataclass(frozen=True)
class Column:
    name: str  # as in the source
    source_type: str  # the declared type, upper-cased; "" when the source declares none (SQLite)
    family: str  # one of FAMILIES
    rule: str  # id of the mapping rule that chose the family (typemap.SOURCE_RULES or a data rule)
    nullable: bool = True
    note: str = ""  # why the data changed the declared family, when it did

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"column {self.name}: unknown type family {self.family!r}")


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name.lower() == name.lower():
                return col
        raise KeyError(f"table {self.name} has no column {name}")


@dataclass
class SourceDatabase:
    """One source database: its schema and its rows (all of them, or a sample)."""

    source: str  # "spider1" | "spider2_lite"
    name: str  # the database id the questions use
    source_dialect: str  # "sqlite" | "bigquery" | "snowflake"
    origin: str  # the raw file or folder it was read from, relative to the raw root
    tables: list[Table]
    rows: dict[str, list[tuple]] = field(default_factory=dict)  # table name -> rows, column order
    decisions: list[dict] = field(default_factory=list)  # table-level decisions (dropped keys, caps)

    @property
    def key(self) -> str:
        """The partition key: `<source>/<name>`."""
        return f"{self.source}/{self.name}"

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name.lower() == name.lower():
                return t
        raise KeyError(f"database {self.name} has no table {name}")

    def row_count(self) -> int:
        return sum(len(r) for r in self.rows.values())
