"""The build's services as Dagster resources, chosen by environment through `BuildConfig.from_env`.

- `engines.postgres`: `PLBENCH_PG_DSN`, else a private pgserver under `.cache/pgserver`; always present.
- `engines.oracle`: `PLBENCH_ORACLE_DSN`, else a `NotConfigured` with the reason (stages record `not_run`).
- `llm`: `PLBENCH_LLM_BASE_URL` / `_MODEL` / `_API_KEY`, else a `NotConfigured` with the reason.

Each engine resource opens its engine per use (`with engines.open(dialect) as engine`) and closes it after,
so an asset never sees a DSN and never branches on whether a server exists: it hands what `open`
yields (an `Engine` or a `NotConfigured`) to the library. Secrets stay out of the UI's resource page:
a setting that came from the environment is given to Dagster as an `EnvVar`, shown by name only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from plbench.config import NO_ORACLE, BuildConfig, NotConfigured
from plbench.engines.base import Engine
from plbench.llm import LLMClient, LLMSettings


class PostgresResource(dg.ConfigurableResource):
    """PostgreSQL: the server at `dsn`, else a private pgserver in `data_dir` (started once, then reused)."""

    dsn: str | None = None
    data_dir: str
    statement_timeout_s: float = 60.0

    @contextlib.contextmanager
    def open(self) -> Iterator[Engine]:
        from plbench.engines.postgres import PostgresEngine

        engine = PostgresEngine.start(
            self.dsn, data_dir=Path(self.data_dir), statement_timeout_s=self.statement_timeout_s
        )
        try:
            yield engine
        finally:
            engine.close()


class OracleResource(dg.ConfigurableResource):
    """Oracle at `dsn` (user/password@host:port/service); without one, a `NotConfigured` saying so."""

    dsn: str | None = None
    connect_timeout_s: float = 10.0
    statement_timeout_s: float = 60.0

    @contextlib.contextmanager
    def open(self) -> Iterator[Engine | NotConfigured]:
        if not self.dsn:
            yield NotConfigured(NO_ORACLE, dialect="oracle")
            return
        from plbench.engines.oracle import OracleEngine

        engine = OracleEngine.connect(
            self.dsn, connect_timeout_s=self.connect_timeout_s, statement_timeout_s=self.statement_timeout_s
        )
        try:
            yield engine
        finally:
            engine.close()


class LLMResource(dg.ConfigurableResource):
    """An OpenAI-compatible endpoint, its answers cached in `cache_dir`; `not_configured` says why there is none."""

    base_url: str | None = None
    model: str | None = None
    api_key: str = ""
    cache_dir: str
    not_configured: str = ""

    def client(self) -> LLMClient | NotConfigured:
        if self.not_configured:
            return NotConfigured(self.not_configured)
        return LLMClient(LLMSettings(self.base_url, self.model, self.api_key), Path(self.cache_dir))


def _shown_by_name(value: str | None, env_name: str) -> str | dg.EnvVar | None:
    """The value, or the `EnvVar` it came from: the UI then shows the variable's name, not a password.
    (Dagster resolves an `EnvVar` when a run starts, so only resources given to `Definitions` use it.)"""
    return dg.EnvVar(env_name) if value and os.environ.get(env_name) == value else value


class EnginesResource(dg.ConfigurableResource):
    """The target engines, one per dialect: `with engines.open(dialect) as engine`."""

    postgres: PostgresResource
    oracle: OracleResource

    def open(self, dialect: str) -> contextlib.AbstractContextManager[Engine | NotConfigured]:
        return getattr(self, dialect).open()


def engines_resource(config: BuildConfig, in_definitions: bool = True) -> EnginesResource:
    def secret(value: str | None, env_name: str):
        return _shown_by_name(value, env_name) if in_definitions else value

    return EnginesResource(
        postgres=PostgresResource(
            dsn=secret(config.pg_dsn, "PLBENCH_PG_DSN"),
            data_dir=str(config.pg_data_dir),
            statement_timeout_s=config.statement_timeout_s,
        ),
        oracle=OracleResource(
            dsn=secret(config.oracle_dsn, "PLBENCH_ORACLE_DSN"),
            connect_timeout_s=config.oracle_connect_timeout_s,
            statement_timeout_s=config.statement_timeout_s,
        ),
    )


def llm_resource(config: BuildConfig, in_definitions: bool = True) -> LLMResource:
    cache = str(config.cache_dir / "llm")
    if isinstance(config.llm, NotConfigured):
        return LLMResource(cache_dir=cache, not_configured=config.llm.reason)
    key = config.llm.api_key
    if in_definitions:  # the key came from one of these two variables, or is the dummy one
        source = next((n for n in ("PLBENCH_LLM_API_KEY", "OPENAI_API_KEY") if os.environ.get(n) == key), "")
        key = _shown_by_name(key, source) if source else key
    return LLMResource(base_url=config.llm.base_url, model=config.llm.model, api_key=key, cache_dir=cache)


@contextlib.contextmanager
def open_engines(config: BuildConfig, dialects) -> Iterator[dict[str, Engine | NotConfigured]]:
    """The engines of `dialects` outside a Dagster run (the evaluate and crosscheck commands)."""
    engines = engines_resource(config, in_definitions=False)
    with contextlib.ExitStack() as stack:
        yield {d: stack.enter_context(engines.open(d)) for d in sorted(dialects)}
