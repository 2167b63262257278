"""A stage value's content digest: equal for equal content, whichever process built it.

Dagster records it as the asset's data version, so a stage whose inputs' digests did not change
need not run again. Pickled bytes would not do: a set's order follows the process's string hash
seed, and the values carry the time each stage took, which differs on every run.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePath
from uuid import UUID

from sqlglot import exp

# Values that are content as their type and repr (the databases' values among them: a call suite's arguments)
SCALARS = (
    bool,
    int,
    float,
    complex,
    enum.Enum,
    PurePath,
    Decimal,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    UUID,
)
# Measurements, not content: they differ on every run.
VOLATILE_FIELDS = frozenset({"seconds", "cpu_seconds", "wall_seconds", "built_at"})
DIGEST_HEX = 24


def content_digest(value) -> str:
    """sha256 (first 24 hex digits) of the value's content, without its VOLATILE_FIELDS."""
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.hexdigest()[:DIGEST_HEX]


def _part(value) -> bytes:
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.digest()


def _feed(digest, value) -> None:
    kind = type(value)
    feed = _FEEDERS.get(kind)
    if feed is None:  # the rule is the type's: found once per type, as the values are many and small
        feed = _FEEDERS[kind] = _rule_for(kind)
    feed(digest, value)


def _feed_str(digest, value: str) -> None:
    digest.update(b"s%d:" % len(value) + value.encode("utf-8", "surrogatepass"))


def _feed_bytes(digest, value) -> None:
    digest.update(b"b%d:" % len(value) + bytes(value))


def _feed_scalar(digest, value) -> None:
    digest.update(f"{type(value).__name__}:{value!r};".encode())


def _feed_sequence(digest, value) -> None:
    digest.update(b"l%d[" % len(value))
    for item in value:
        _feed(digest, item)
    digest.update(b"]")


def _feed_dict(digest, value: dict) -> None:  # insertion order is not content: sorted by the keys
    if all(type(key) is str for key in value):  # most are: the keys' own order, no digest per key
        digest.update(b"D%d{" % len(value))
        for key in sorted(value):
            _feed_str(digest, key)
            _feed(digest, value[key])
    else:  # keys of any type, ordered by their digests
        digest.update(b"d%d{" % len(value))
        for key_part, item in sorted(((_part(k), v) for k, v in value.items()), key=lambda kv: kv[0]):
            digest.update(key_part)
            _feed(digest, item)
    digest.update(b"}")


def _feed_set(digest, value) -> None:
    digest.update(b"e%d{" % len(value) + b"".join(sorted(_part(v) for v in value)) + b"}")


def _feed_tree(digest, value: exp.Expr) -> None:
    """A sqlglot tree: its nodes as `dump` lists them (class, place, value, comments), iteratively, so a
    deep tree needs no deep recursion; not the parse positions (`m`), which equal trees need not share."""
    _feed(digest, _without_positions(value.dump()))


def _without_positions(nodes: list[dict]) -> list[dict]:
    """`dump` nodes without `m`; a node's type (`t`, as a CAST's target) is a dump of its own."""
    return [{k: _without_positions(v) if k == "t" else v for k, v in node.items() if k != "m"} for node in nodes]


def _feed_content(digest, value) -> None:  # a class that says what it holds (plbench.procedures.stored_trees)
    _feed(digest, (type(value).__qualname__, value.__content__()))


def _fields_feeder(kind: type, names: list[str]):
    """Feeds an object of `kind` as its type's name and the fields `names` but VOLATILE_FIELDS, in that order."""
    head = f"o:{kind.__qualname__}(".encode()
    labels = [(name, name.encode() + b"=") for name in names if name not in VOLATILE_FIELDS]

    def feed(digest, value) -> None:
        digest.update(head)
        for name, label in labels:
            digest.update(label)
            _feed(digest, getattr(value, name))
        digest.update(b")")

    return feed


def _feed_other(digest, value) -> None:
    if hasattr(value, "__dict__"):  # its attributes, whichever it has
        _fields_feeder(type(value), sorted(vars(value)))(digest, value)
    elif hasattr(value, "to_string"):  # pyarrow schemas and types
        _feed(digest, f"{type(value).__name__}:{value.to_string()}")
    else:
        raise TypeError(f"content_digest: no content rule for a {type(value).__name__}")


def _rule_for(kind: type):
    if issubclass(kind, str):
        return _feed_str
    if issubclass(kind, bytes | bytearray):
        return _feed_bytes
    if kind is type(None) or issubclass(kind, SCALARS):
        return _feed_scalar
    if issubclass(kind, list | tuple):
        return _feed_sequence
    if issubclass(kind, dict):
        return _feed_dict
    if issubclass(kind, set | frozenset):
        return _feed_set
    if hasattr(kind, "__content__"):
        return _feed_content
    if issubclass(kind, exp.Expr):  # before `__dict__`: a tree's nodes keep their content in slots
        return _feed_tree
    if dataclasses.is_dataclass(kind):  # a field left out of equality is a cache or a measurement
        return _fields_feeder(kind, [f.name for f in dataclasses.fields(kind) if f.compare])
    return _feed_other


_FEEDERS: dict[type, Callable] = {}
