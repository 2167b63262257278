"""Shared pytest fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plbench.engines.postgres import PostgresEngine

pytest_plugins = ("tests.procedure_fixtures",)  # fixture, seed_build, seeds, env: the procedural fixture database

REPO = Path(__file__).resolve().parent.parent
PG_DATA_DIR = REPO / ".cache" / "test-pgserver"
RAW = os.environ.get("PLBENCH_RAW_DIR")  # the full raw mirror, for the mirror tier (tests/test_mirror.py)

CROSSCHECK_CANDIDATES = [
    {
        "task_id": "mbpp/1",
        "dialect": "postgres",
        "code": "CREATE OR REPLACE FUNCTION sort_list(xs bigint[]) RETURNS bigint[] LANGUAGE sql AS $$ "
        "SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest(xs) AS x $$;",
    },
    {
        "task_id": "mbpp/6",
        "dialect": "postgres",
        "code":  # wrong: the odd test
        "CREATE OR REPLACE FUNCTION is_even(n bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT n % 2 = 1 $$;",
    },
]


@pytest.fixture(scope="session")
def pg_engine():
    """A real PostgreSQL: PLBENCH_PG_DSN when set, else an embedded server in .cache/test-pgserver."""
    engine = PostgresEngine.start(os.environ.get("PLBENCH_PG_DSN"), data_dir=PG_DATA_DIR)
    yield engine
    engine.close()


def fixture_config(tmp_path_factory, pg_engine):
    """A build configuration over a fresh miniature mirror (tests/fixtures.py) and fresh output folders."""
    from plbench.config import BuildConfig
    from plbench.sandbox import SandboxLimits
    from tests.fixtures import write_mirror, write_spider1, write_spider2

    root = tmp_path_factory.mktemp("mirror")
    catalog = write_mirror(root) | write_spider1(root) | write_spider2(root, tmp_path_factory.mktemp("staging"))
    solutions = root / "solutions.jsonl"
    solutions.write_text("".join(json.dumps(c) + "\n" for c in CROSSCHECK_CANDIDATES))
    return BuildConfig(
        raw_dir=root,
        cache_dir=tmp_path_factory.mktemp("cache"),
        out_dir=tmp_path_factory.mktemp("releases"),
        catalog=catalog,
        pg_dsn=pg_engine._dsn,
        normalized_dir=tmp_path_factory.mktemp("normalized"),
        validation_dir=tmp_path_factory.mktemp("validation"),
        version="t1",
        min_retention=0.5,
        min_gold_equivalence=0.5,
        crosscheck_solutions=solutions,
        sandbox=SandboxLimits(cpu_seconds=5, wall_seconds=15, case_seconds=2),
        procedure_ile_rounds=2,  # episodes of 3 turns at most: the least that makes one, to keep the build quick
    )


@pytest.fixture(scope="session")
def fixture_build(tmp_path_factory, pg_engine):
    """One in-process build of the miniature mirror, shared by the build, UI and celery tests:
    (config, Dagster instance). The instance's folder is a DAGSTER_HOME `plbench dev` can open."""
    import dagster as dg

    from pipelines.cli import execute, report

    config = fixture_config(tmp_path_factory, pg_engine)
    instance = dg.DagsterInstance.local_temp(
        str(tmp_path_factory.mktemp("dagster")), overrides={"telemetry": {"enabled": False}}
    )
    result = execute(config, instance=instance)
    assert report(result) == 0
    assert instance.get_runs_count() == 1  # the partitions are registered before the run: one run builds all
    return config, instance


def pytest_collection_modifyitems(items):
    """The mirror tier runs last: its build (`mirror_build`) runs meanwhile, beside the rest of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("mirror") is not None)


@pytest.fixture(scope="session", autouse=True)
def mirror_build(request, tmp_path_factory):
    """The mirror tier's one build, started with the session in another process (tests/background_build.py)
    when PLBENCH_RAW_DIR is set and mirror tests are collected; None otherwise."""
    if not RAW or not any(item.get_closest_marker("mirror") for item in request.session.items):
        yield None
        return
    from tests.background_build import BackgroundBuild

    build = BackgroundBuild(Path(RAW).resolve(), tmp_path_factory.mktemp("mirror-build"))
    yield build
    build.stop()
