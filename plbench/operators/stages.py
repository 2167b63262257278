"""The operator stages of the MBPP pipeline, as plain functions over stage outputs.

- `augment_constant_tasks`: after signature inference, every task a constant candidate passes
  gets generated cases, or is rejected (`constant_result`).
- `ile_tasks`: the `mbpp_ile` subset, one enhanced task per MBPP task with at least one accepted
  round; its tasks then go through the same emission, replay and round trip as MBPP's.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from plbench.config import BuildConfig
from plbench.mbpp.artifacts import TypedTask
from plbench.mbpp.stages import Ingested, StageOutput
from plbench.operators.constant import augment_constant, is_constant
from plbench.operators.framework import Ledger, Proposer
from plbench.operators.ile import SUBSET, Enhanced, SandboxExecutor, enhance
from plbench.records import Rejection

DEFAULT_ROUNDS = 2


def reference_code(ingested: list[Ingested]) -> dict[tuple[str, str], str]:
    return {(p.subset, p.source_id): p.reference_code for subset in ingested for p in subset.problems}


def augment_constant_tasks(typed: StageOutput, ingested: list[Ingested], config: BuildConfig) -> StageOutput:
    """The typed tasks, each constant-passable one augmented with generated cases or rejected
    (the output holds this stage's rejections only)."""
    start = time.perf_counter()
    code = reference_code(ingested)
    constant = [t for t in typed.items if is_constant(t)]

    def augment(task: TypedTask) -> TypedTask | Rejection:
        return augment_constant(task, code[(task.subset, task.source_id)])

    with ThreadPoolExecutor(max_workers=config.workers) as pool:
        done = dict(zip((t.task_id for t in constant), pool.map(augment, constant)))
    out = StageOutput([])
    for task in typed.items:
        result = done.get(task.task_id, task)
        (out.rejections if isinstance(result, Rejection) else out.items).append(result)
    out.seconds = time.perf_counter() - start
    return out


@dataclass
class IleOutput:
    """The enhanced tasks (as a typed stage output), their references, proposers and the ledger."""

    typed: StageOutput
    source_ids: tuple[str, ...]  # the MBPP tasks ILE was run on: each ends released or rejected
    tasks: StageOutput | None = None  # the enhanced tasks' artifacts in both dialects
    references: dict[tuple[str, str], str] = field(default_factory=dict)
    proposers: dict[str, str] = field(default_factory=dict)  # task_id -> proposer
    rounds: dict[str, int] = field(default_factory=dict)  # task_id -> accepted rounds
    ledger: Ledger = field(default_factory=Ledger)

    @property
    def input_count(self) -> int:
        return len(self.source_ids)


def ile_tasks(
    typed: StageOutput,
    ingested: list[Ingested],
    config: BuildConfig,
    proposer: Proposer,
    rounds: int = DEFAULT_ROUNDS,
    source_subset: str = "mbpp",
) -> IleOutput:
    """Enhance every typed task of `source_subset`; each ends enhanced or rejected with the reason."""
    start = time.perf_counter()
    code = reference_code(ingested)
    sources = [t for t in typed.items if t.subset == source_subset]
    executor = SandboxExecutor()

    def one(task: TypedTask) -> tuple[Enhanced | Rejection, Ledger]:
        ledger = Ledger()
        return enhance(task, code[(task.subset, task.source_id)], proposer, executor, rounds, ledger), ledger

    with ThreadPoolExecutor(max_workers=config.workers) as pool:
        results = list(pool.map(one, sources))
    out = IleOutput(StageOutput([]), tuple(t.source_id for t in sources))
    for result, ledger in results:
        out.ledger.extend(ledger)
        if isinstance(result, Rejection):
            out.typed.rejections.append(result)
            continue
        out.typed.items.append(result.task)
        out.references[(SUBSET, result.task.source_id)] = result.code
        out.proposers[result.task.task_id] = result.proposer
        out.rounds[result.task.task_id] = result.rounds
    out.typed.seconds = time.perf_counter() - start
    return out
