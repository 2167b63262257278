"""What differs between two sets of release task rows, keyed by (task_id, dialect).

Used by the build report (`release.diff_against_previous`, on the content columns), and by
`plbench diff` and `bench/compare_releases.py` (every column but the build's own identity).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

BUILD_IDENTITY = ("builder_version", "build_id")  # differ between any two builds by design
EXCERPT = 160  # characters of a changed value shown with `values`


@dataclass
class RowDiff:
    added: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    changed: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # key -> fields that differ
    only_old_columns: list[str] = field(default_factory=list)
    only_new_columns: list[str] = field(default_factory=list)

    def changed_per_field(self) -> dict[str, int]:
        return dict(sorted(Counter(f for fields in self.changed.values() for f in fields).items()))

    def summary(self) -> dict:
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "changed_per_field": self.changed_per_field(),
            "only_old_columns": self.only_old_columns,
            "only_new_columns": self.only_new_columns,
        }


def _key(row: dict) -> tuple[str, str]:
    return row["task_id"], row["dialect"]


def diff_rows(old: list[dict], new: list[dict], fields: tuple[str, ...] | None = None) -> RowDiff:
    """Rows added, removed and changed (in `fields`, else in every column both sides have but the
    build identity); a column only one side has is reported, not compared."""
    old_columns = set(old[0]) if old else set()
    new_columns = set(new[0]) if new else set()
    compared = fields or tuple(sorted((old_columns & new_columns) - set(BUILD_IDENTITY)))
    before, after = {_key(r): r for r in old}, {_key(r): r for r in new}
    out = RowDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        only_old_columns=sorted(old_columns - new_columns) if old and new else [],
        only_new_columns=sorted(new_columns - old_columns) if old and new else [],
    )
    for key in sorted(before.keys() & after.keys()):
        differ = [f for f in compared if before[key].get(f) != after[key].get(f)]
        if differ:
            out.changed[key] = differ
    return out


def digested(rows: Iterable[dict], fields: tuple[str, ...]) -> list[dict]:
    """Each row's key and a digest of each of `fields` in place of its value: what `diff_rows` needs to
    count changes, without holding two releases' texts (the mirror's tasks.parquet is 1.3 GB in Python)."""
    return [{"task_id": r["task_id"], "dialect": r["dialect"], **{f: _digest(r.get(f)) for f in fields}} for r in rows]


def _digest(text: str | None) -> bytes | None:  # the content columns are text (JSON columns hold JSON text)
    return None if text is None else hashlib.blake2b(text.encode(), digest_size=16).digest()


def read_digested(path: Path, fields: tuple[str, ...], batch_rows: int = 2048) -> list[dict]:
    """`digested` over a tasks.parquet, read a batch at a time; a field the file lacks digests as None."""
    parquet = pq.ParquetFile(path)
    columns = ["task_id", "dialect", *(f for f in fields if f in parquet.schema_arrow.names)]
    return [
        row
        for batch in parquet.iter_batches(batch_rows, columns=columns)
        for row in digested(batch.to_pylist(), fields)
    ]


def read_tasks(release_dir: Path) -> list[dict]:
    path = Path(release_dir) / "tasks.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{release_dir}: not a release folder (no tasks.parquet)")
    return pq.read_table(path).to_pylist()


def _excerpt(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def report_lines(old_dir: Path, new_dir: Path, values: bool = False) -> list[str]:
    """One line per removed, added and changed task (with the fields that changed, and with
    `values` the start of each old and new value), then the totals."""
    old, new = read_tasks(old_dir), read_tasks(new_dir)
    diff = diff_rows(old, new)
    before, after = {_key(r): r for r in old}, {_key(r): r for r in new}
    lines = [f"removed  {task} [{target}]" for task, target in diff.removed]
    lines += [f"added    {task} [{target}]" for task, target in diff.added]
    for key, fields in diff.changed.items():
        lines.append(f"changed  {key[0]} [{key[1]}]: {', '.join(fields)}")
        if values:
            for f in fields:
                lines += [f"    {f}: {_excerpt(before[key][f])}", f"    {' ' * len(f)}→ {_excerpt(after[key][f])}"]
    summary = diff.summary()
    lines += [
        "",
        f"{old_dir} ({len(old)} rows) → {new_dir} ({len(new)} rows)",
        f"columns only in old: {summary['only_old_columns'] or 'none'}",
        f"columns only in new: {summary['only_new_columns'] or 'none'}",
        f"added {summary['added']}, removed {summary['removed']}, changed {summary['changed']}",
    ]
    lines += [f"  {name}: {count}" for name, count in summary["changed_per_field"].items()]
    return lines
