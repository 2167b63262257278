"""Build configuration: one typed object, read from the environment and the CLI once."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from plbench.llm import LLMSettings, not_configured
from plbench.paths import project_root
from plbench.sandbox import SandboxLimits

SUBSETS = (
    "mbpp",
    "mbpp_plus",
    "mbpp_ile",
    "spider_plsql",
    "spider2",
    "procedures",
    "procedures_ile",
    "multiturn",
    "interactive",
)
SEEDED_SUBSETS = ("procedures", "procedures_ile", "multiturn")  # built from the procedures' seeds (Spider 1.0)
DIALECT_NAMES = ("oracle", "postgres")
NO_ORACLE = "PLBENCH_ORACLE_DSN is not set: no Oracle server configured"
# A JSON file of settings (BuildConfig.to_settings) every process of one build reads: the UI's code
# server, celery workers and Kubernetes pods then run with the configuration of the process that wrote it.
SETTINGS_ENV = "PLBENCH_SETTINGS"
PATH_SETTINGS = (
    "raw_dir",
    "cache_dir",
    "out_dir",
    "normalized_dir",
    "validation_dir",
    "download_dir",
    "crosscheck_solutions",
)
PROCEDURE_DATABASES = 0  # the default of BuildConfig.procedure_databases (see there)
PROCEDURE_ILE_DATABASES = 60  # the default of BuildConfig.procedure_ile_databases (see there)
PROCEDURE_WORKERS = 2  # the default of BuildConfig.procedure_workers (see there)
SCALED_TASK_SHARDS = 8  # task shards on an executor that runs steps in other processes (see task_shards)


@dataclass(frozen=True)
class NotConfigured:
    """A service the build runs without (an Oracle server, a model endpoint) and why: what needed it
    records `not_run` with this reason. For an engine, `dialect` names the target it stands in for."""

    reason: str
    dialect: str | None = None


@dataclass(frozen=True)
class BuildConfig:
    raw_dir: Path | None = None  # a local mirror of the raw sources; None downloads them
    cache_dir: Path = field(default_factory=lambda: project_root() / ".cache")
    out_dir: Path = field(default_factory=lambda: project_root() / "releases")
    # Emitted DDL and data per database and dialect, and each database's verification report.
    normalized_dir: Path = field(default_factory=lambda: project_root() / "normalized")
    # Each validation stage's report per release version (validation/README.md).
    validation_dir: Path = field(default_factory=lambda: project_root() / "validation")
    # Raw files fetched from their public URLs (when no mirror is named), below the catalog.
    download_dir: Path = field(default_factory=lambda: project_root() / "raw_sources" / "downloads")
    version: str | None = None  # None: derived from the builder version and the build id
    subsets: tuple[str, ...] = SUBSETS
    pg_dsn: str | None = None  # None: start a private PostgreSQL server under cache_dir
    oracle_dsn: str | None = None  # None: Oracle validation is recorded as not_run
    statement_timeout_s: float = 60.0
    oracle_connect_timeout_s: float = 10.0
    workers: int = 2
    min_retention: float = 0.9  # released / input per subset and dialect; below it the release is blocked
    min_gold_equivalence: float = 0.99  # Spider 1.0 dev gold queries identical on PostgreSQL and SQLite
    spider_row_cap: int | None = None  # rows read per Spider 1.0 table; None: all of them
    # MBPP+ runs ~100 generated inputs per task in one child. Measured on MBPP+ v0.1.0 (43,318
    # cases of 399 tasks, bench/reproducible_mbpp_plus.py): 98.6% of cases need under 1 ms of
    # CPU, none between 4.2 s and 10 s; the costliest case 2.6 s of CPU on a quiet machine and
    # 4.2 s at a load average of 14 (the CPU a case needs grows with contention too), the
    # costliest task 30 s, 54 s at load 14, in 246 s of wall time. Wall time under load was
    # 1-5x the CPU time, which is why wall-clock budgets (5 s a case, 8 s a task) dropped 79-141
    # cases depending on load. The budgets below count CPU time and sit about 5x above the
    # loaded costs, so load cannot change a case's fate; after 3 timed-out cases a task's other
    # cases are not run (a count, as stable as each case). The wall clock only stops a reference
    # that sleeps or blocks, 7x above the slowest loaded task.
    sandbox: SandboxLimits = field(
        default_factory=lambda: SandboxLimits(
            cpu_seconds=300, wall_seconds=1800.0, case_seconds=20.0, max_case_timeouts=3
        )
    )
    catalog: dict | None = None  # source catalog override (tests); None: plbench.raw_sources.CATALOG
    # The crosscheck stage's candidates: a JSONL of {task_id, dialect, code}, else a model
    # (PLBENCH_LLM_BASE_URL / PLBENCH_LLM_MODEL) prompted at this hint level, else not run.
    crosscheck_solutions: Path | None = None
    llm_hint: str = "none"
    llm: LLMSettings | NotConfigured = NotConfigured(not_configured({}))
    # ILE on MBPP (subset mbpp_ile): "deterministic" (the rule templates, offline) or "llm" (the model above)
    ile_proposer: str = "deterministic"
    ile_rounds: int = 2
    # Where a run's steps execute (pipelines/definitions.py EXECUTORS): "in_process" (one process, as
    # the CLI runs), "multiprocess", "celery" (workers on the broker `celery_broker`, e.g. Redis), "k8s"
    # (one Kubernetes job per step; the cluster settings go in the run config). Never part of a release.
    executor: str = "in_process"
    # Steps the in_process executor runs at a time, each on a thread (PLBENCH_STEPS_AT_ONCE; pipelines/step_threads.py).
    # A stage keeps this machine's 2 cores busy only part of the time; with 2, four-subset mirror builds from
    # nothing took 242.6 and 226.7 s, against 254.5 and 251.6 s with 1, one step after another (bench/rebuild_time.py
    # --compare-steps-at-once 2,1,2,1). Never part of a release.
    steps_at_once: int = 2
    celery_broker: str | None = None
    # Task shards of MBPP's test-case extraction and of replay (PLBENCH_TASK_SHARDS): each shard is a step of its
    # own, which the workers of a multiprocess, celery or Kubernetes executor run side by side. 0, the default:
    # one shard in process (one step does it all; shards there would only add idle tails to the sandbox pool),
    # SCALED_TASK_SHARDS on the other executors. Never part of a release: the shards merge back in task order.
    task_shards: int = 0
    # Procedures (subset procedures): how many Spider 1.0 databases take part, spread over the name order
    # (PLBENCH_PROCEDURE_DATABASES; 0, the default: every one). Seeds, suites, mutants and scenarios of all 163
    # take 8.7 min with 2 workers on this quiet 2-core machine (bench/procedures_sample.py --every 1 --workers 2:
    # 1885 seeds over 150 databases).
    procedure_databases: int = PROCEDURE_DATABASES
    # Databases the procedures stages (seeds, scenarios, procedural ILE, interactive) build side by side
    # (PLBENCH_PROCEDURE_WORKERS; threads sharing one engine, plbench.procedures.parallel). The output is the
    # same for any number, so it is no part of the fingerprint.
    # bench/procedures_sample.py --every 20 (9 databases, 120 seeds) on these 2 cores, load 2.6-4.8 from other
    # work: 1 worker 50.4 and 56.6 s, 2 workers 39.8 and 29.6 s, 3 workers 28.1 s; 2, as 3 gained no more.
    procedure_workers: int = PROCEDURE_WORKERS
    # ILE on the procedures' seeds (subsets procedures_ile, multiturn): rounds per seed at most
    # (PLBENCH_PROCEDURE_ILE_ROUNDS); an episode has 3 to 5 turns, so 2 to 4 rounds make one. Same proposer as MBPP's.
    procedure_ile_rounds: int = 3
    # How many of the databases with seeds procedural ILE enhances (PLBENCH_PROCEDURE_ILE_DATABASES; 0: every
    # one), spread over the name order as procedure_databases is: ILE runs each seed's rounds with their suites,
    # mutants and trivial candidates, 0.87 s a seed (bench/procedural_ile_sample.py --every 16: 111 of 120 seeds
    # enhanced, 99 with >= 2 rounds), 27 min for all 1885. 60 databases hold about 750 seeds, enough for >= 500
    # tasks of >= 2 rounds. The Interactive variants take every seed: a final round where ILE ran, else the seed.
    procedure_ile_databases: int = PROCEDURE_ILE_DATABASES

    @classmethod
    def from_env(cls, **overrides) -> BuildConfig:
        """The one place the environment is read (PLBENCH_*); every stage takes what it needs from here."""
        env = os.environ
        values = {
            "raw_dir": Path(env["PLBENCH_RAW_DIR"]).resolve() if env.get("PLBENCH_RAW_DIR") else None,
            "pg_dsn": env.get("PLBENCH_PG_DSN") or None,
            "oracle_dsn": env.get("PLBENCH_ORACLE_DSN") or None,
            "crosscheck_solutions": Path(env["PLBENCH_CROSSCHECK_SOLUTIONS"]).resolve()
            if env.get("PLBENCH_CROSSCHECK_SOLUTIONS")
            else None,
            "llm_hint": env.get("PLBENCH_LLM_HINT") or "none",
            "llm": NotConfigured(not_configured(env)) if not_configured(env) else LLMSettings.from_env(env),
            "ile_proposer": env.get("PLBENCH_ILE_PROPOSER") or "deterministic",
            "ile_rounds": int(env["PLBENCH_ILE_ROUNDS"]) if env.get("PLBENCH_ILE_ROUNDS") else 2,
            "executor": env.get("PLBENCH_EXECUTOR") or "in_process",
            "steps_at_once": int(env.get("PLBENCH_STEPS_AT_ONCE") or cls.steps_at_once),
            "celery_broker": env.get("PLBENCH_CELERY_BROKER") or None,
            "task_shards": int(env.get("PLBENCH_TASK_SHARDS") or 0),
            "procedure_databases": int(env.get("PLBENCH_PROCEDURE_DATABASES") or PROCEDURE_DATABASES),
            "procedure_workers": int(env.get("PLBENCH_PROCEDURE_WORKERS") or PROCEDURE_WORKERS),
            "procedure_ile_rounds": int(env.get("PLBENCH_PROCEDURE_ILE_ROUNDS") or 3),
            "procedure_ile_databases": int(env.get("PLBENCH_PROCEDURE_ILE_DATABASES") or PROCEDURE_ILE_DATABASES),
        }
        if env.get(SETTINGS_ENV):
            values.update(read_settings(Path(env[SETTINGS_ENV])))
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def to_settings(self) -> dict:
        """Every setting as JSON, but the model endpoint: that comes from the environment (it may hold a key)."""
        from plbench.raw_sources.catalog import catalog_table

        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "llm"}
        out |= {name: str(out[name]) for name in PATH_SETTINGS if out[name] is not None}
        out |= {"subsets": list(self.subsets), "sandbox": asdict(self.sandbox)}
        out["catalog"] = catalog_table(self.catalog) if self.catalog is not None else None
        return out

    def with_(self, **changes) -> BuildConfig:
        return replace(self, **changes)

    @property
    def shard_count(self) -> int:
        """How many task shards the sharded stages split into (`task_shards`, 0 chosen by the executor)."""
        if self.task_shards < 0:
            raise ValueError(f"task_shards must be 0 (by executor) or a positive count, not {self.task_shards}")
        return self.task_shards or (1 if self.executor == "in_process" else SCALED_TASK_SHARDS)

    @property
    def storage_dir(self) -> Path:
        """Where Dagster keeps stored asset values (so one stage can be rerun from them)."""
        return self.cache_dir / "dagster-storage"

    @property
    def pg_data_dir(self) -> Path:
        return self.cache_dir / "pgserver"

    def fingerprint(self) -> dict:
        """The settings that change the content of a release (part of the build id, and the manifest's
        `configuration`): a model by its name and sampling settings only, never its key or endpoint."""
        model = None if isinstance(self.llm, NotConfigured) else f"llm:{self.llm.provenance}"
        proposer = self.ile_proposer if self.ile_proposer == "deterministic" else model or "llm, none configured"
        return {
            "subsets": sorted(self.subsets),
            "min_retention": self.min_retention,
            "min_gold_equivalence": self.min_gold_equivalence,
            "spider_row_cap": self.spider_row_cap,
            "ile_proposer": proposer,
            # the rows' replay and crosscheck statuses: validated on Oracle or not, checked against which candidates
            "oracle_server": self.oracle_dsn is not None,
            "crosscheck": self._crosscheck_source(model),
            "ile_rounds": self.ile_rounds,
            "procedure_databases": self.procedure_databases,
            "procedure_ile_rounds": self.procedure_ile_rounds,
            "procedure_ile_databases": self.procedure_ile_databases,
        }

    def _crosscheck_source(self, model: str | None) -> str | None:
        """The crosscheck's candidates: a file by its content's digest, else the model at the hint level."""
        if self.crosscheck_solutions is None:
            return model and f"{model}, hint {self.llm_hint}"
        try:
            return "file:" + hashlib.sha256(self.crosscheck_solutions.read_bytes()).hexdigest()[:16]
        except OSError as exc:
            raise ValueError(f"crosscheck_solutions {self.crosscheck_solutions}: cannot be read ({exc})") from exc


def read_settings(path: Path) -> dict:
    """BuildConfig fields from a settings file (`to_settings`'s JSON); an unknown name is an error."""
    from plbench.raw_sources.catalog import catalog_from_table

    values = json.loads(path.read_text(encoding="utf-8"))
    unknown = sorted(set(values) - {f.name for f in fields(BuildConfig)} | ({"llm"} & set(values)))
    if unknown:
        raise ValueError(f"{path}: unknown settings {unknown} (the model endpoint comes from PLBENCH_LLM_*)")
    values |= {name: Path(values[name]) for name in PATH_SETTINGS if values.get(name) is not None}
    if "subsets" in values:
        values["subsets"] = tuple(values["subsets"])
    if "sandbox" in values:
        values["sandbox"] = SandboxLimits(**values["sandbox"])
    if values.get("catalog") is not None:
        values["catalog"] = catalog_from_table(values["catalog"])
    return values
