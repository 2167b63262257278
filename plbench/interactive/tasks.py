"""Interactive variants of procedural tasks: a task's requirement perturbed, its hidden-fact ledger, and the
task whose requirement states every fact as its Direct twin.

What is perturbed (a `VariantSource`) is either a plain seed, its twin the seed's A1 task of `procedures`, or the
final round of a seed procedural ILE enhanced, its twin that seed's `procedures_ile` task: the requirement with
the round clauses, that round's reference, call suite and trivial candidates. The requirement goes through
`plbench.operators.perturbations.perturb` (every ledger entry proven by execution there; masking the last
round's clause must also make the previous round's reference, executed, diverge); the reference, call suite and
initial state are the version's own, so a solver that recovers every hidden fact can pass exactly what the
Direct twin's solver passes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from plbench.operators.framework import Ledger, Proposer
from plbench.operators.perturbations import SUBSET, Perturbed, perturb
from plbench.operators.procedural_ile import EnhancedSeed
from plbench.procedures.archetypes import Seed
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios import a1
from plbench.procedures.seeds import SUBSET as PROCEDURES
from plbench.procedures.seeds import ValidatedSeed
from plbench.procedures.tasks import AdapterContext, ScenarioTask, make_task, prompt
from plbench.records import Rejection
from plbench.taskrow import TaskRow

SCENARIO = "interactive"
TASK_TEXT = (
    "Write the procedure. Some facts of the requirement are hidden, named by terms it does not define, or "
    "contradicted: ask the user, who knows what it means to say."
)


def direct_task_id(seed_id: str) -> str:
    """The Direct twin of a plain seed's variant: the seed's A1 task, whose requirement states every fact."""
    return f"{PROCEDURES}/{a1.SCENARIO}/{seed_id}"


@dataclass(frozen=True)
class VariantSource:
    """What one Interactive variant is made from: the version perturbed, its Direct twin, and for ILE's final
    round the previous round's seed (the implementation ignoring the last clause) and the rounds accepted."""

    validated: ValidatedSeed
    direct_task_id: str
    previous: Seed | None = None
    ile_rounds: int | None = None

    @property
    def seed_id(self) -> str:
        return self.validated.seed.seed_id


def plain_source(validated: ValidatedSeed) -> VariantSource:
    return VariantSource(validated, direct_task_id(validated.seed.seed_id))


def enhanced_source(enhanced: EnhancedSeed, twin_task_id: str) -> VariantSource:
    """ILE's final round, `twin_task_id` the id its procedures_ile rows carry."""
    return VariantSource(enhanced.final, twin_task_id, enhanced.history[-2].seed, enhanced.rounds)


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


def interactive_row(
    task: ScenarioTask, perturbed: Perturbed, source: VariantSource, engine_version: str | None
) -> TaskRow:
    ledger = json.dumps([e.to_json() for e in perturbed.ledger], ensure_ascii=False)
    return task_row(task, engine_version).with_(
        subset=SUBSET,
        source_id=task.seed_id,  # one input per seed, as the subset's rejections name it
        ledger=ledger,
        direct_task_id=source.direct_task_id,
        proposer=perturbed.proposer,
        ile_rounds=source.ile_rounds,
    )


def seed_rows(
    ctx: AdapterContext, source: VariantSource, proposer: Proposer, ledger: Ledger, engine_version: str | None
) -> list[TaskRow] | Rejection:
    """A source's Interactive rows (`ctx` on its version), or the rejection saying why none was made; `ledger`
    gets every verdict."""
    perturbed = perturb(ctx, proposer, ledger, previous=source.previous)
    if isinstance(perturbed, Rejection):
        return perturbed
    return [interactive_row(t, perturbed, source, engine_version) for t in interactive_tasks(ctx, perturbed)]
