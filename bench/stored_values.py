"""What a stage pays to read back the values an earlier build stored, in one run: each stored value loaded
as the storage used to load it (the cyclic collector on, every sqlglot tree rebuilt: the baseline, the
trees forced after loading), with the trees left stored until read (plbench.procedures.stored_trees), and
with the collector paused as well (pipelines/storage.py), which is how a stage now reads them.

    python bench/stored_values.py [--storage DIR] [ASSET ...]

`--storage` is the stage storage of a build of this code (default this checkout's `.cache/dagster-storage`);
the assets default to the procedure stages' values. Each load runs in a fresh process, so no load pays for
the objects another left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

ASSETS = ("procedure_seeds", "procedures_tasks", "procedures_ile_tasks", "multiturn_tasks", "interactive_tasks")
# (label, collector paused, trees rebuilt)
WAYS = (
    ("collector on, trees rebuilt (baseline)", False, True),
    ("collector on, trees kept", False, False),
    ("collector paused, trees kept (the storage now)", True, False),
)


def _force_trees(value) -> int:
    """Read one tree of every StoredTrees the value holds (which rebuilds them all); how many there were."""
    from plbench.procedures.stored_trees import StoredTrees

    seen, todo, count = set(), [value], 0
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, str | bytes | int | float | bool | type(None)):
            continue
        seen.add(id(item))
        if isinstance(item, StoredTrees):
            count += 1
            next(iter(item.values()), None)
        elif isinstance(item, dict):
            todo += item.values()
        elif isinstance(item, list | tuple | set | frozenset):
            todo += item
        elif hasattr(item, "__dict__"):
            todo += vars(item).values()
    return count


def _load(path: str, way: int) -> dict:
    from plbench.collector import collector_paused

    _, paused, rebuilt = WAYS[way]
    start = time.perf_counter()
    with collector_paused() if paused else contextlib.nullcontext(), open(path, "rb") as file:
        value = pickle.load(file)
    loaded = time.perf_counter() - start
    if not rebuilt:
        return {"seconds": loaded, "trees": 0}
    # the walk that reads the trees, less a second walk (nothing left to rebuild): the rebuilding alone
    start = time.perf_counter()
    trees = _force_trees(value)
    walk_and_rebuild = time.perf_counter() - start
    start = time.perf_counter()
    _force_trees(value)
    rebuild = walk_and_rebuild - (time.perf_counter() - start)
    return {"seconds": loaded + rebuild, "trees": trees}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assets", nargs="*", default=list(ASSETS))
    parser.add_argument("--storage", type=Path, default=Path(".cache/dagster-storage"))
    parser.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        print(json.dumps(_load(args._child[0], int(args._child[1]))))
        return
    for asset in args.assets:
        path = args.storage / asset
        if not path.exists():
            print(f"{asset}: not stored under {args.storage}")
            continue
        print(f"{asset} ({path.stat().st_size / 1e6:.0f} MB)")
        base = None
        for way, (label, *_) in enumerate(WAYS):
            command = [sys.executable, __file__, "--_child", str(path), str(way)]
            out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            base = base or out["seconds"]
            trees = f", {out['trees']} sets of trees rebuilt" if out["trees"] else ""
            print(f"  {label:48s} {out['seconds']:5.2f} s ({out['seconds'] / base:4.0%}{trees})")


if __name__ == "__main__":
    main()
