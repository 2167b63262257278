"""Interactive variants of procedural tasks: the A1 task of a seed with its requirement perturbed, its
hidden-fact ledger, and the A1 task as its Direct twin.

The requirement is the seed's A1 requirement after `plbench.operators.perturbations.perturb` (every
ledger entry proven by execution there); the reference, call suite and initial state are the seed's,
so a solver that recovers every hidden fact can pass exactly what the Direct twin's solver passes.
"""

from __future__ import annotations

import dataclasses
import json

from plbench.operators.framework import Ledger, Proposer
from plbench.operators.perturbations import SUBSET, Perturbed, perturb
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios import a1
from plbench.procedures.seeds import SUBSET as PROCEDURES
from plbench.procedures.tasks import AdapterContext, ScenarioTask, make_task, prompt
from plbench.records import Rejection
from plbench.taskrow import TaskRow

SCENARIO = "interactive"
TASK_TEXT = (
    "Write the procedure. Some facts of the requirement are hidden, named by terms it does not define, or "
    "contradicted: ask the user, who knows what it means to say."
)


def direct_task_id(seed_id: str) -> str:
    """The Direct twin: the seed's A1 task, whose requirement states every fact."""
    return f"{PROCEDURES}/{a1.SCENARIO}/{seed_id}"


def interactive_tasks(ctx: AdapterContext, perturbed: Perturbed) -> list[ScenarioTask]:
    """The variant in every dialect of the seed (Oracle emitted with static checks, as A1 is)."""
    notes = (f"perturbations: {', '.join(f'{e.id} {e.op}' for e in perturbed.ledger)} (proposer {perturbed.proposer})",)
    return [
        dataclasses.replace(
            make_task(ctx, SCENARIO, d, prompt(ctx, d, TASK_TEXT, perturbed.lines, {}), {}, notes=notes),
            task_id=f"{SUBSET}/{perturbed.seed_id}",
        )
        for d in ctx.seed.dialects
    ]


def interactive_row(task: ScenarioTask, perturbed: Perturbed, engine_version: str | None) -> TaskRow:
    ledger = json.dumps([e.to_json() for e in perturbed.ledger], ensure_ascii=False)
    return task_row(task, engine_version).with_(
        subset=SUBSET,
        source_id=task.seed_id,  # one input per seed, as the subset's rejections name it
        ledger=ledger,
        direct_task_id=direct_task_id(task.seed_id),
        proposer=perturbed.proposer,
    )


def seed_rows(
    ctx: AdapterContext, proposer: Proposer, ledger: Ledger, engine_version: str | None
) -> list[TaskRow] | Rejection:
    """A seed's Interactive rows, or the rejection saying why none was made; `ledger` gets every verdict."""
    perturbed = perturb(ctx, proposer, ledger)
    if isinstance(perturbed, Rejection):
        return perturbed
    return [interactive_row(t, perturbed, engine_version) for t in interactive_tasks(ctx, perturbed)]
