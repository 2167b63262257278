"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plbench.engines.postgres import PostgresEngine

REPO = Path(__file__).resolve().parent.parent
PG_DATA_DIR = REPO / ".cache" / "test-pgserver"


@pytest.fixture(scope="session")
def pg_engine():
    """A real PostgreSQL: PLBENCH_PG_DSN when set, else an embedded server in .cache/test-pgserver."""
    engine = PostgresEngine.start(os.environ.get("PLBENCH_PG_DSN"), data_dir=PG_DATA_DIR)
    yield engine
    engine.close()
