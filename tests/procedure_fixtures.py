"""A small Spider-like database for the procedural tests: keys, NULLs, ties and an empty table.

`load_fixture(engine, folder)` writes it as SQLite, normalizes and loads it into PostgreSQL the way the
build does, and runs its gold queries through the gold-equivalence check, so seeds are lifted from
the same EquivalenceResults the build hands over. The module-scoped pytest fixtures below (registered
for every test by tests/conftest.py) give a test module the loaded database, its validated seeds and
a procedural-ILE executor on it, so no test module repeats them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from plbench.normalize.emit import NormalizedDatabase, normalize
from plbench.normalize.load import load_postgres
from plbench.normalize.sqlite_source import read_sqlite
from plbench.spider import gold

SCHEMA = """
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, score INTEGER, joined DATE);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), amount REAL,
                     status TEXT);
CREATE TABLE archive (id INTEGER PRIMARY KEY, note TEXT);
INSERT INTO customer VALUES (1, 'Ann', 'Paris', 70, '2020-01-05'), (2, 'Bob', NULL, 50, '2021-03-01'),
                            (3, 'Cy', 'Oslo', 50, '2019-12-31'), (4, 'Dee', 'Paris', 90, NULL),
                            (5, 'Eve', 'Rome', 20, '2022-07-07');
INSERT INTO orders VALUES (10, 1, 12.5, 'open'), (11, 1, 7, 'closed'), (12, 2, 100.25, 'open'),
                          (13, 4, 10, 'open'), (14, 5, 3, NULL), (15, 3, 55, 'closed');
"""

GOLD = [
    "SELECT name FROM customer WHERE score > 50",
    "SELECT count(*) FROM orders WHERE status = 'open'",
    "SELECT T1.name, T2.amount FROM customer AS T1 JOIN orders AS T2 ON T1.id = T2.customer_id "
    "WHERE T1.city = 'Paris' AND T2.amount >= 10",
    "SELECT name FROM customer",
    "SELECT name FROM customer WHERE score >= 50 ORDER BY score LIMIT 1",
    "SELECT status FROM orders WHERE customer_id = 1",
    "SELECT count(*) FROM archive WHERE id = 1",
]

# Column names Oracle reserves (date, level, comment, user; PostgreSQL reserves user): test_procedure_oracle
RESERVED_SCHEMA = """
CREATE TABLE event (id INTEGER PRIMARY KEY, date TEXT, level INTEGER, comment TEXT, user TEXT);
INSERT INTO event VALUES (1, '2020-01-01', 1, 'a', 'ann'), (2, '2020-02-01', 2, 'b', 'bob'),
                         (3, '2021-01-01', 3, NULL, 'cy'), (4, NULL, 2, 'd', NULL), (5, '2019-05-05', 5, 'e', 'eve');
"""
RESERVED_GOLD = [
    "SELECT date FROM event WHERE level > 2",
    "SELECT comment, user FROM event WHERE level >= 2",
    "SELECT level FROM event WHERE id = 3",
]


@dataclass
class Fixture:
    pg: NormalizedDatabase
    oracle: NormalizedDatabase
    equivalence: list


def load_fixture(engine, folder: Path, name: str = "procfix", schema: str = SCHEMA, queries=GOLD) -> Fixture:
    """The database `name` (`schema`: SQLite statements, `queries`: its gold SQL), loaded and gold-checked."""
    path = folder / f"{name}.sqlite"
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(schema)
    conn.close()
    source = read_sqlite(path, "spider1", name, f"{name}.sqlite")
    pg, oracle = normalize(source, "postgres"), normalize(source, "oracle")
    with engine.connection() as conn:
        assert load_postgres(conn, pg).verified
    golds = [gold.GoldQuery(str(i), name, "", sql, "train") for i, sql in enumerate(queries, start=1)]
    with engine.session(reads=(pg.schema_name,)) as session:
        equivalence = gold.check_database(path, pg, golds, session, oracle=oracle)
    assert [r.cls for r in equivalence] == ["identical"] * len(golds), [r.detail for r in equivalence]
    return Fixture(pg, oracle, equivalence)


@contextlib.contextmanager
def seed_contexts(engine, folder: Path) -> Iterator[Callable]:
    """The fixture's validated seeds (no scenario task built), as `seed_id -> AdapterContext` on one
    PostgreSQL workspace that lives as long as the context."""
    from plbench.procedures.build import context, database_procedures
    from plbench.procedures.workspace import Workspace

    fixture = load_fixture(engine, folder)
    built = database_procedures(engine, fixture.pg, fixture.oracle, fixture.equivalence, scenarios=())
    seeds = {v.seed.seed_id: v for v in built.seeds.seeds}
    with engine.session(reads=(fixture.pg.schema_name,)) as session:
        workspace = Workspace(session, fixture.pg)
        yield lambda seed_id: context(seeds[seed_id], fixture.pg, fixture.oracle, workspace, frozenset({"postgres"}))


@pytest.fixture(scope="module")
def fixture(pg_engine, tmp_path_factory) -> Fixture:
    """The fixture database, loaded once per test module."""
    return load_fixture(pg_engine, tmp_path_factory.mktemp("procfix"))


@pytest.fixture(scope="module")
def seed_build(pg_engine, fixture):
    """The fixture's seeds as the build makes them: validated seeds and rejections."""
    from plbench.procedures.seeds import database_seeds

    return database_seeds(pg_engine, fixture.pg, fixture.oracle, fixture.equivalence)


@pytest.fixture(scope="module")
def seeds(seed_build) -> dict:
    """The fixture's validated seeds by seed id."""
    return {v.seed.seed_id: v for v in seed_build.seeds}


@pytest.fixture(scope="module")
def env(pg_engine, fixture):
    """A procedural-ILE executor on the fixture database (a workspace and its shuffled twin)."""
    from plbench.operators.procedural_ile import ProcEnv
    from plbench.procedures.seeds import workspaces

    with workspaces(pg_engine, fixture.pg) as (workspace, shuffled):
        yield ProcEnv(workspace, shuffled, fixture.pg, fixture.oracle)


def subset_part(engine, database: str, built, engines=None, config=None):
    """The procedures subset's release part, its stages run as its assets run them, the build's scenario work
    done by `built` (a DatabaseProcedures of the loaded `database`); `engines`: the validate stage's."""
    from types import SimpleNamespace

    from plbench.config import BuildConfig
    from plbench.procedures.stages import ProcedureSeeds, ProcedureTasks
    from plbench.subsets.base import Staged
    from plbench.subsets.procedures import SUBSET, ingest
    from plbench.subsets.procedures import built as built_stage

    inputs, config = {"spider/train_gold.sql": "0" * 64}, config or BuildConfig()
    seeds = ingest(config, SimpleNamespace(inputs=inputs), ProcedureSeeds({database: built.seeds}))
    made = built_stage(ProcedureTasks(seeds.value.seeds, [built], ("postgres",), engine.version(), inputs))
    tasks = Staged(made.value, seeds.count_in, made.count_out, seeds.rejections + made.rejections)
    return SUBSET.stages.validation(config, tasks, engines or {}).value
