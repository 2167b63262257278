"""Spider 1.0 gold queries: read them, transpile SQLite to PostgreSQL and Oracle, prove equivalence.

One module per concern: `reading` (the gold files), `scope` (what a rule knows about a query),
`affinity` and `rules` (the rewrite rules, in the order of `RULES`), `transpile`, `comparison`
(results compared with `plbench.compare.same`) and `equivalence` (run both sides and classify).

A normalized database is only trustworthy if the questions asked of it still get
the answers the benchmark recorded. So every gold query is run on the source
SQLite file and, transpiled, on the loaded PostgreSQL schema, and the two results
are compared as multisets (as sequences when the outermost statement has ORDER BY).

Transpiling is sqlglot (read='sqlite'; it already spells out SQLite's NULL ordering
and NULL-on-division-by-zero) plus the schema-aware rules in `RULES`, each a small
function of (tree, context), named and tested on its own (`apply_rule`):
names mapped to the target's folded names; "x" read as a string when no column x
is in scope; bare columns of aggregate queries picked explicitly; SQLite's type
affinity in comparisons and arithmetic (text vs number, number before text, dates
stored as text); ASCII-only case-insensitive LIKE; Oracle's exact division; cross
joins; and the order SQLite gives to rows tied on the ORDER BY keys (rowid order,
or group-key order as its query plan says), so that LIMIT keeps the same rows.

`compare` normalizes values before comparing: Decimal/bool/int/float as numbers
(equal within FLOAT_REL_TOL relative, FLOAT_ABS_TOL absolute), dates and times as
ISO text, bytes as hex, and, in a column one side returns as numbers and the other
as text, numeric text as numbers.
"""

from plbench.spider.gold.comparison import FLOAT_ABS_TOL, FLOAT_REL_TOL, Comparison, compare
from plbench.spider.gold.equivalence import (
    CLASSES,
    EquivalenceResult,
    check_database,
    check_query,
    run_sqlite,
    summarize,
)
from plbench.spider.gold.reading import GoldFormatError, GoldQuery, read_spider_dev, read_train_gold
from plbench.spider.gold.rules import RULES
from plbench.spider.gold.scope import TranspileError
from plbench.spider.gold.transpile import apply_rule, has_outer_order, oracle_names, sqlite_plan, transpile

__all__ = [
    "CLASSES",
    "FLOAT_ABS_TOL",
    "FLOAT_REL_TOL",
    "RULES",
    "Comparison",
    "EquivalenceResult",
    "GoldFormatError",
    "GoldQuery",
    "TranspileError",
    "apply_rule",
    "check_database",
    "check_query",
    "compare",
    "has_outer_order",
    "oracle_names",
    "read_spider_dev",
    "read_train_gold",
    "run_sqlite",
    "sqlite_plan",
    "summarize",
    "transpile",
]
