"""Databases side by side: a database's procedures work is mostly waiting on PostgreSQL (installs, calls and
state reads, one round trip each), so a few threads sharing one engine, each database in its own sessions,
keep the server and the client busy at once. bench/procedures_sample.py --workers measures it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from plbench.progress import counted

Item = TypeVar("Item")
Result = TypeVar("Result")


def each_database(work: Callable[[Item], Result], items: Sequence[Item], workers: int) -> list[Result]:
    """`work(item)` for every item, the results in the items' order, on up to `workers` threads (1: this one),
    each reported done (plbench.progress); the first exception raised is raised here."""
    if workers <= 1 or len(items) <= 1:
        return list(counted(map(work, items), len(items), "databases"))
    with ThreadPoolExecutor(min(workers, len(items)), thread_name_prefix="plbench-procedures") as pool:
        return list(counted(pool.map(work, items), len(items), "databases"))
