"""One object per target dialect owns naming, quoting, literals, type DDL and harness text.

The rest of the code asks "the dialect" (`DIALECTS[name]`) and never branches on
the dialect's name.
"""

from collections.abc import Iterable
from typing import TypeVar

from plbench.dialects.base import Dialect, TypeEnv
from plbench.dialects.oracle import OracleDialect
from plbench.dialects.postgres import PostgresDialect

T = TypeVar("T")

DIALECTS: dict[str, Dialect] = {"oracle": OracleDialect(), "postgres": PostgresDialect()}


def of_dialect(items: Iterable[T], name: str | None) -> list[T]:
    """The items (rows, artifacts, rejections: anything with a `.dialect`) of one dialect; with
    None, those of no dialect in particular."""
    return [item for item in items if item.dialect == name]


__all__ = ["DIALECTS", "Dialect", "TypeEnv", "of_dialect"]
