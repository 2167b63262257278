"""The one typed task row of `tasks.parquet`, and Arrow schemas derived from dataclasses.

Every subset builds its release rows as `TaskRow`s; the Parquet schema is derived from the
field types (`arrow_schema`), so a column is added in one place and no row dict is written
by hand. The columns the procedural, scenario and operator subsets need are here already
(optional, None by default), so those subsets plug in without a schema change.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from plbench import __version__

_ARROW_TYPES = {str: pa.string(), int: pa.int32(), bool: pa.bool_(), float: pa.float64()}


def arrow_type(hint) -> pa.DataType:
    """str → string, int → int32, bool, float → float64, tuple[T, ...] / list[T] → list<T>; `X | None` → X."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return arrow_type(inner)
    if origin in (tuple, list):
        return pa.list_(arrow_type(args[0]))
    if hint not in _ARROW_TYPES:
        raise TypeError(f"no Arrow type for field type {hint!r}")
    return _ARROW_TYPES[hint]


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def arrow_schema(cls: type, columns: tuple[str, ...] | None = None) -> pa.Schema:
    """The Arrow schema of a dataclass's fields (in `columns` order when given)."""
    hints = typing.get_type_hints(cls)
    names = columns or _field_names(cls)
    return pa.schema([(name, arrow_type(hints[name])) for name in names])


def as_record(obj) -> dict:
    """A dataclass instance as an Arrow row: its fields by name, tuples as lists. (The field names are
    looked up once per class: dataclasses.fields took half the time of turning 77,000 rows into records.)"""
    return {name: list(v) if isinstance(v := getattr(obj, name), tuple) else v for name in _field_names(type(obj))}


@dataclass(frozen=True, kw_only=True)
class TaskRow:
    """One released task in one dialect (DESIGN §4). JSON columns hold JSON text."""

    task_id: str  # `<subset>/<source id>`, stable across rebuilds
    subset: str
    dialect: str
    source_dataset: str
    source_id: str
    database: str | None = None
    prompt: str
    entry_point: str | None = None
    signature: str | None = None  # JSON
    setup_sql: str | None = None
    scaffold: str
    reference_code: str | None = None
    python_reference: str | None = None
    test_block: str | None = None
    test_cases: str  # JSON
    comparison: str  # JSON: how a candidate's output is compared with the expected one
    difficulty: str | None = None
    turns: int = 1
    plsql_constructs: tuple[str, ...] = ()
    reasoning_types: tuple[str, ...] = ()
    tables_required: tuple[str, ...] = ()
    columns_required: tuple[str, ...] = ()
    replay_status: str
    replay_engine: str | None = None
    replay_detail: str | None = None
    mutants_total: int | None = None
    mutants_killed: int | None = None
    crosscheck_status: str = "not_run"
    crosscheck_detail: str | None = None
    notes: tuple[str, ...] = ()
    raw_sha256: str | None = None
    builder_version: str = __version__
    build_id: str | None = None
    # procedural tasks and construction operators (PROCARENA.md, DESIGN §3b / §3c)
    scenario: str | None = None  # scenario adapter, e.g. "A1"
    materials: str | None = None  # JSON: file name -> text
    call_suite: str | None = None  # JSON
    statements: int | None = None  # statements in the reference procedure
    cyclomatic: int | None = None  # its cyclomatic complexity
    proposer: str | None = None  # who proposed an operator's change: "llm:<model>" | "rules"
    ile_rounds: int | None = None
    ledger: str | None = None  # JSON: an Interactive task's hidden facts [{id, op, key, answer, evidence}]
    direct_task_id: str | None = None  # the task a constructed one derives from
    conversation_id: str | None = None  # multi-turn episodes
    turn_index: int | None = None
    turn_count: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.task_id, self.dialect

    def with_(self, **changes) -> TaskRow:
        return dataclasses.replace(self, **changes)


TASK_SCHEMA = arrow_schema(TaskRow)


def by_dialect(items: Iterable) -> defaultdict[str | None, list]:
    """Task rows or rejections grouped by their `dialect` (None: a rejection that holds for every dialect)."""
    groups: defaultdict[str | None, list] = defaultdict(list)
    for item in items:
        groups[item.dialect].append(item)
    return groups


def task_records(rows: list[TaskRow]) -> list[dict]:
    """The Arrow rows of tasks.parquet, sorted by subset, task id and dialect."""
    return [as_record(r) for r in sorted(rows, key=lambda r: (r.subset, r.task_id, r.dialect))]


@dataclass(frozen=True, kw_only=True)
class TypeRow:
    """A named collection or object type of one dialect, once, with how many released tasks use it."""

    dialect: str
    name: str
    ddl: str
    tasks: int


TYPE_SCHEMA = arrow_schema(TypeRow)


def type_rows(usages: Iterable[tuple[str, str, str]]) -> list[dict]:
    """The Arrow rows of types.parquet from (dialect, name, DDL), one per task using the type, sorted;
    a name given two definitions in one dialect is an error."""
    ddl: dict[tuple[str, str], str] = {}
    count: Counter = Counter()
    for dialect, name, text in usages:
        if ddl.setdefault((dialect, name), text) != text:
            raise AssertionError(f"type {name} has two definitions in {dialect}")
        count[(dialect, name)] += 1
    return [as_record(TypeRow(dialect=d, name=n, ddl=ddl[(d, n)], tasks=count[(d, n)])) for d, n in sorted(ddl)]
