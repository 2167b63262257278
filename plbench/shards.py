"""Task shards: a stage's tasks split into parts that run as separate steps (side by side on the workers of a
multiprocess, celery or Kubernetes executor), merged back into exactly what one pass over every task gives.

A shard is `Shard(index, count, part)`, so the merge puts the parts back in their places whichever order the
executor finished them in. Round robin rather than ranges: neighbouring tasks often cost alike (MBPP+'s
heaviest references are numbered close together), and the parts should take about the same time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Shard(Generic[T]):
    index: int
    count: int
    part: T


def split(items: list[T], shards: int) -> list[list[T]]:
    """`shards` parts (fewer when there are fewer items, at least one): item k goes to part k % shards."""
    count = max(1, min(shards, len(items)))
    return [part_of(items, Shard(i, count, None)) for i in range(count)]


def part_of(items: list[T], shard: Shard) -> list[T]:
    """The items of shard `shard.index` of `shard.count` (round robin), for a shard that names its part only:
    a step reading the items itself, rather than a copy of its part stored and read back."""
    return items[shard.index :: shard.count]


def indexes(shards: int) -> list[Shard[None]]:
    """`shards` shards (at least one) that name their part only (`part_of`); empty parts when items are fewer."""
    count = max(1, shards)
    return [Shard(i, count, None) for i in range(count)]


def in_order(shards: list[Shard]) -> list:
    """The shards' parts by index, after checking that every shard of the split is there once."""
    ordered = sorted(shards, key=lambda s: s.index)
    indexes, counts = [s.index for s in ordered], {s.count for s in ordered}
    if counts != {len(ordered)} or indexes != list(range(len(ordered))):
        raise ValueError(f"shards {indexes} of {sorted(counts)}: expected each of 0..n-1 once")
    return [s.part for s in ordered]


def interleave(parts: list[list[T]]) -> list[T]:
    """The inverse of `split`: the items of the parts back in their first order."""
    count = len(parts)
    return [parts[k % count][k // count] for k in range(sum(map(len, parts)))]
