"""Every task row that differs between two release folders, and a summary.

    python bench/compare_releases.py releases/OLD releases/NEW [--values]

Rows are keyed by (task_id, dialect). `builder_version` and `build_id` are ignored; a
column only one release has is reported apart and not compared. `--values` prints the
start of the old and new value of each changed field.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from plbench.release_diff import diff_rows, read_tasks

EXCERPT = 160


def _excerpt(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--values", action="store_true", help="print old and new values of changed fields")
    args = parser.parse_args(argv)
    old, new = read_tasks(args.old), read_tasks(args.new)
    diff = diff_rows(old, new)
    before = {(r["task_id"], r["dialect"]): r for r in old}
    after = {(r["task_id"], r["dialect"]): r for r in new}
    for key in diff.removed:
        print(f"removed  {key[0]} [{key[1]}]")
    for key in diff.added:
        print(f"added    {key[0]} [{key[1]}]")
    for key, fields in diff.changed.items():
        print(f"changed  {key[0]} [{key[1]}]: {', '.join(fields)}")
        if args.values:
            for f in fields:
                print(f"    {f}: {_excerpt(before[key][f])}\n    {' ' * len(f)}→ {_excerpt(after[key][f])}")
    summary = diff.summary()
    print(f"\n{args.old} ({len(old)} rows) → {args.new} ({len(new)} rows)")
    print(f"columns only in old: {summary['only_old_columns'] or 'none'}")
    print(f"columns only in new: {summary['only_new_columns'] or 'none'}")
    print(f"added {summary['added']}, removed {summary['removed']}, changed {summary['changed']}")
    for name, count in summary["changed_per_field"].items():
        print(f"  {name}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
