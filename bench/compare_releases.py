"""Every task row that differs between two release folders, and a summary.

    python bench/compare_releases.py releases/OLD releases/NEW [--values]

Rows are keyed by (task_id, dialect). `builder_version` and `build_id` are ignored; a
column only one release has is reported apart and not compared. `--values` prints the
start of the old and new value of each changed field. The same report as `plbench diff`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from plbench.release_diff import report_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--values", action="store_true", help="print old and new values of changed fields")
    args = parser.parse_args(argv)
    print("\n".join(report_lines(args.old, args.new, values=args.values)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
