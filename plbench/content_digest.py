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
from decimal import Decimal
from pathlib import PurePath
from uuid import UUID

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
    if isinstance(value, str):
        digest.update(b"s%d:" % len(value) + value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, bytes | bytearray):
        digest.update(b"b%d:" % len(value) + bytes(value))
    elif value is None or isinstance(value, SCALARS):
        text = f"{type(value).__name__}:{value!r};".encode()
        digest.update(text)
    elif isinstance(value, list | tuple):
        digest.update(b"l%d[" % len(value))
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, dict):  # insertion order is not content: sorted by the keys' digests
        digest.update(b"d%d{" % len(value))
        for key_part, item in sorted(((_part(k), v) for k, v in value.items()), key=lambda kv: kv[0]):
            digest.update(key_part)
            _feed(digest, item)
        digest.update(b"}")
    elif isinstance(value, set | frozenset):
        digest.update(b"e%d{" % len(value) + b"".join(sorted(_part(v) for v in value)) + b"}")
    elif hasattr(value, "__content__"):  # a class that says what it holds (plbench.procedures.stored_trees)
        _feed(digest, (type(value).__qualname__, value.__content__()))
    elif dataclasses.is_dataclass(value):  # a field left out of equality is a cache or a measurement
        _feed_fields(digest, value, [f.name for f in dataclasses.fields(value) if f.compare])
    elif hasattr(value, "__dict__"):
        _feed_fields(digest, value, sorted(vars(value)))
    elif hasattr(value, "to_string"):  # pyarrow schemas and types
        _feed(digest, f"{type(value).__name__}:{value.to_string()}")
    else:
        raise TypeError(f"content_digest: no content rule for a {type(value).__name__}")


def _feed_fields(digest, value, names: list[str]) -> None:
    digest.update(f"o:{type(value).__qualname__}(".encode())
    for name in names:
        if name not in VOLATILE_FIELDS:
            digest.update(name.encode() + b"=")
            _feed(digest, getattr(value, name))
    digest.update(b")")
