"""The MBPP and MBPP+ stages as plain functions: raw files → typed tasks → artifacts → replay and round trip.

Each stage takes the previous stage's value and returns its own plus the
rejections it made. Dagster assets (assets) and the tests call these
functions; nothing here imports Dagster.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from plbench.config import BuildConfig
from plbench.dialects import DIALECTS
from plbench.dialects.base import UnrepresentableValue
from plbench.dialects.static_checks import check_block_structure, check_type_ddl
from plbench.mbpp.artifacts import TaskEmitter, TypedTask, ints_fit_bigint
from plbench.mbpp.cases import cases_from_sandbox, extract_mbpp, plan_mbpp_plus
from plbench.mbpp.extract import ExtractedTask, ExtractionError
from plbench.mbpp.pytypes import TypingError
from plbench.mbpp.typing_stage import type_task
from plbench.raw_sources import CATALOG, read_mbpp, read_mbpp_plus, resolve
from plbench.records import RawProblem, Rejection
from plbench.sandbox import run_many
from plbench.shards import Shard, in_order, interleave, part_of, split
from plbench.taskrow import by_dialect, type_rows

if TYPE_CHECKING:  # annotations only: a stage module that runs no replay has no replay code in its version
    from plbench.validation.replay import ReplayResult
    from plbench.validation.roundtrip import RoundTrip


@dataclass
class StageOutput:
    """What a stage hands on, plus what it rejected and a few numbers for the reader."""

    items: list
    rejections: list[Rejection] = field(default_factory=list)
    seconds: float = 0.0

    def rejected_by_reason(self, level: str = "task") -> dict[str, int]:
        return dict(sorted(Counter(r.reason_code for r in self.rejections if r.level == level).items()))


@dataclass(frozen=True)
class Ingested:
    subset: str
    problems: list[RawProblem]
    rejections: list[Rejection]
    inputs: dict[str, str]  # relative raw path -> sha256

    @property
    def input_count(self) -> int:
        return len(self.problems) + sum(1 for r in self.rejections if r.level == "task")


def ingest(config: BuildConfig, subset: str) -> Ingested:
    """Resolve (mirror or download, always checksum-verified) and read one subset's raw files."""
    sources = {s.relative_path: s for s in (config.catalog or CATALOG)[subset]}
    paths = {rel: resolve(s, config.raw_dir, config.download_dir) for rel, s in sources.items()}
    if subset == "mbpp":
        main, sanitized = "mbpp/mbpp.jsonl", "mbpp/sanitized-mbpp.json"
        problems, rejections = read_mbpp(paths[main], main, paths.get(sanitized))
    else:
        (main,) = paths
        problems, rejections = read_mbpp_plus(paths[main], main)
    return Ingested(subset, problems, rejections, {rel: s.sha256 for rel, s in sorted(sources.items())})


def _task_rejection(problem: RawProblem, stage: str, exc: ExtractionError | TypingError) -> Rejection:
    return Rejection(problem.subset, problem.source_id, stage, exc.reason_code, exc.detail)


def extract_test_cases(ingested: list[Ingested], config: BuildConfig) -> StageOutput:
    """MBPP asserts → cases; MBPP+ inputs → cases with outputs from the sandboxed reference."""
    start = time.perf_counter()
    out = StageOutput([])
    plans = []
    for subset in ingested:
        for problem in subset.problems:
            try:
                if problem.subset == "mbpp":
                    task, dropped = extract_mbpp(problem)
                    out.items.append(task)
                    out.rejections.extend(dropped)
                else:
                    plans.append(plan_mbpp_plus(problem))
            except ExtractionError as exc:
                out.rejections.append(_task_rejection(problem, "test_extraction", exc))
    jobs = [p.sandbox_job() for p in plans]
    for plan, result in zip(plans, run_many(jobs, config.sandbox, workers=config.workers)):
        try:
            task, dropped = cases_from_sandbox(plan, result)
            out.items.append(task)
            out.rejections.extend(dropped)
        except ExtractionError as exc:
            out.rejections.append(_task_rejection(plan.problem, "test_extraction", exc))
    out.seconds = time.perf_counter() - start
    return out


def extraction_shards(ingested: list[Ingested], shards: int) -> list[Shard[list[Ingested]]]:
    """The problems of every subset, split into `shards` parts for `extract_test_cases` (plbench.shards)."""
    parts = split([p for subset in ingested for p in subset.problems], shards)
    return [
        Shard(i, len(parts), [replace(s, problems=[p for p in part if p.subset == s.subset]) for s in ingested])
        for i, part in enumerate(parts)
    ]


def merge_test_cases(ingested: list[Ingested], shards: list[Shard[StageOutput]]) -> StageOutput:
    """The shards' `extract_test_cases` outputs as one, tasks and rejections in the problems' order (within a
    problem, as its shard gave them), so any number of shards gives the same value."""
    position = {(p.subset, p.source_id): n for n, p in enumerate(p for subset in ingested for p in subset.problems)}
    parts = in_order(shards)
    return StageOutput(
        sorted((t for part in parts for t in part.items), key=lambda t: position[(t.subset, t.source_id)]),
        sorted((r for part in parts for r in part.rejections), key=lambda r: position[(r.subset, r.source_id)]),
        sum(part.seconds for part in parts),
    )


def infer_signatures(extracted: StageOutput, ingested: list[Ingested]) -> StageOutput:
    start = time.perf_counter()
    texts = {(p.subset, p.source_id): p.text for subset in ingested for p in subset.problems}
    out = StageOutput([])
    task: ExtractedTask
    for task in extracted.items:
        try:
            typed, dropped = type_task(task, texts[(task.subset, task.source_id)])
            out.items.append(typed)
            out.rejections.extend(dropped)
        except TypingError as exc:
            out.rejections.append(
                Rejection(task.subset, task.source_id, "signature_inference", exc.reason_code, exc.detail)
            )
    out.seconds = time.perf_counter() - start
    return out


@dataclass(frozen=True)
class TaskArtifacts:
    """One task in one dialect: the cases that dialect holds, and the emitted text."""

    task: TypedTask  # the dialect's cases (a case whose values it cannot encode is dropped)
    dialect: str
    prompt: str
    signature: str
    setup_sql: str
    scaffold: str
    test_block: str
    test_cases: str
    types: tuple[tuple[str, str], ...]  # (type name, DDL) in creation order

    @property
    def task_id(self) -> str:
        return self.task.task_id


def emit_artifacts(task: TypedTask, dialect: str) -> TaskArtifacts:
    em = TaskEmitter(task, dialect)
    test_block = em.script(em.test_block_statements())
    return TaskArtifacts(
        task,
        dialect,
        em.prompt(),
        em.signature_json(),
        em.script(em.setup_statements()) if em.env.types else "",
        em.scaffold(),
        test_block,
        em.test_cases_json(),
        tuple(em.env.types.items()),
    )


def representable_cases(task: TypedTask, dialect: str) -> tuple[TypedTask, list[Rejection]]:
    """The task without the cases whose values the dialect cannot encode; raises when none is left."""
    em = TaskEmitter(task, dialect)
    kept, dropped = [], []
    for case in task.cases:
        try:
            em.literals(case)
            em.dialect.literal(case.expected, task.signature.returns, em.env)
            kept.append(case)
        except UnrepresentableValue as exc:
            dropped.append(
                Rejection(
                    task.subset,
                    task.source_id,
                    "task_emission",
                    exc.reason_code,
                    f"{case.origin}: {exc.detail}",
                    dialect=dialect,
                    level="case",
                )
            )
    if not kept:
        raise UnrepresentableValue(dropped[0].reason_code, dropped[0].detail)
    if not dropped:
        return task, []
    return replace(task, cases=tuple(kept), ints_fit_bigint=ints_fit_bigint(tuple(kept))), dropped


def _emit_representable(task: TypedTask, dialect: str) -> tuple[TaskArtifacts, list[Rejection]]:
    """Emit the task; only when a value does not encode, drop those cases and emit again."""
    try:
        return emit_artifacts(task, dialect), []
    except UnrepresentableValue:
        dialect_task, dropped = representable_cases(task, dialect)
        return emit_artifacts(dialect_task, dialect), dropped


def build_tasks(typed: StageOutput) -> StageOutput:
    """Artifacts for every task and dialect. Cases a dialect cannot encode are dropped for that
    dialect only; a task left with none is rejected for that dialect only."""
    start = time.perf_counter()
    out = StageOutput([])
    for task in typed.items:
        for target in sorted(DIALECTS):
            try:
                artifacts, dropped = _emit_representable(task, target)
            except UnrepresentableValue as exc:
                out.rejections.append(
                    Rejection(task.subset, task.source_id, "task_emission", exc.reason_code, exc.detail, dialect=target)
                )
                continue
            problems = static_problems(artifacts)
            if problems:
                out.rejections.append(
                    Rejection(
                        task.subset,
                        task.source_id,
                        "task_emission",
                        "static_check_failed",
                        "; ".join(problems)[:1000],
                        dialect=target,
                    )
                )
                continue
            out.items.append(artifacts)
            out.rejections.extend(dropped)
    out.seconds = time.perf_counter() - start
    return out


def static_problems(artifacts: TaskArtifacts) -> list[str]:
    """What the server-free checks find wrong in a task's SQL (the only check Oracle gets here)."""
    dialect = DIALECTS[artifacts.dialect]
    problems = check_type_ddl(dialect, [ddl for _, ddl in artifacts.types])
    for name, text in (("scaffold", artifacts.scaffold), ("test block", artifacts.test_block)):
        problems += [f"{name}: {p}" for p in check_block_structure(text)]
    return problems


def type_usages(artifacts: list[TaskArtifacts]) -> list[tuple[str, str, str]]:
    """(dialect, type name, DDL) once per task artifact using the type."""
    return [(art.dialect, name, ddl) for art in artifacts for name, ddl in art.types]


def collect_types(artifacts: list[TaskArtifacts]) -> list[dict]:
    """Every named type, once per dialect and name, with how many tasks use it."""
    return type_rows(type_usages(artifacts))


@dataclass
class ReplayReport:
    """Replay validation of one dialect: whether it ran, where, and the per-task results."""

    dialect: str
    ran: bool
    reason: str = ""  # why it did not run
    engine: str = ""  # e.g. "PostgreSQL 16.2"
    results: list[ReplayResult] = field(default_factory=list)
    seconds: float = 0.0
    tasks: int = 0  # the tasks it was given, replayed or not

    def counts(self, task_ids: set[str] | None = None) -> dict:
        if not self.ran:
            return {"ran": False, "reason": self.reason}
        mine = _restricted(self.results, task_ids)
        passed = sum(r.status == "passed" for r in mine)
        return {"ran": True, "engine": self.engine, "passed": passed, "failed": len(mine) - passed}

    def mutant_counts(self, task_ids: set[str] | None = None) -> dict:
        mine = _restricted(self.results, task_ids)
        total = sum(r.mutants_total for r in mine)
        killed = sum(r.mutants_killed for r in mine)
        return {"total": total, "killed": killed, "kill_rate": round(killed / total, 6) if total else None}


def _restricted(results: list, task_ids: set[str] | None) -> list:
    """Per-task results of the given tasks (all when task_ids is None)."""
    return results if task_ids is None else [r for r in results if r.task_id in task_ids]


def replay_part(tasks: StageOutput, dialect: str, shard: Shard) -> StageOutput:
    """The shard's part of the dialect's artifacts, for `replay_stage` (plbench.shards)."""
    return StageOutput(part_of(by_dialect(tasks.items)[dialect], shard))


def merge_replay(shards: list[Shard[ReplayReport]]) -> ReplayReport:
    """The shards' replay reports as one, results in task order: what one `replay_stage` over all gives."""
    parts = in_order(shards)
    first = parts[0]
    if any(
        (p.dialect, p.ran, p.reason, p.engine) != (first.dialect, first.ran, first.reason, first.engine) for p in parts
    ):
        raise ValueError(f"replay shards of {first.dialect} ran on different engines: {[p.engine for p in parts]}")
    return replace(
        first,
        results=interleave([p.results for p in parts]),
        seconds=sum(p.seconds for p in parts),
        tasks=sum(p.tasks for p in parts),
    )


@dataclass
class RoundTripReport:
    """The value round trip of one dialect: whether it ran, and per-task counts."""

    dialect: str
    ran: bool
    reason: str = ""
    results: list[RoundTrip] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self, task_ids: set[str] | None = None) -> dict:
        if not self.ran:
            return {"ran": False, "reason": self.reason}
        mine = _restricted(self.results, task_ids)
        return {
            "ran": True,
            "values": sum(r.values for r in mine),
            "equal": sum(r.equal for r in mine),
            "tasks_with_mismatches": sorted(r.task_id for r in mine if r.equal != r.values),
        }
