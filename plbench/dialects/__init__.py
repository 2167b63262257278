"""One object per target dialect owns naming, quoting, literals, type DDL and harness text.

The rest of the code asks "the dialect" (`DIALECTS[name]`) and never branches on
the dialect's name.
"""

from plbench.dialects.base import Dialect, TypeEnv
from plbench.dialects.oracle import OracleDialect
from plbench.dialects.postgres import PostgresDialect

DIALECTS: dict[str, Dialect] = {"oracle": OracleDialect(), "postgres": PostgresDialect()}

__all__ = ["DIALECTS", "Dialect", "TypeEnv"]
