"""ILE on MBPP as a subset (`mbpp_ile`): MBPP tasks with business rules added by Iterative Logic
Enhancement (plbench.operators), each rule accepted only when execution shows it changes the result.

The rows are MBPP rows (same emission, replay with mutants, round trip and trivial candidates) that
also carry `proposer` and `ile_rounds`; the manifest's `operators` section holds every operator's
acceptance and rejection rates and its rejections by reason.
"""

from __future__ import annotations

from typing import Any

from plbench.config import DIALECT_NAMES
from plbench.mbpp.stages import type_usages
from plbench.operators.ile import SUBSET as NAME
from plbench.records import task_id
from plbench.subsets.base import SubsetRelease
from plbench.subsets.mbpp import SOURCE_DATASETS, MbppSubset, task_rows, validation_entry

SUMMARY = (
    "MBPP function-writing tasks with one or two business rules added by Iterative Logic Enhancement: each "
    "rule changes the Python reference and adds one requirement clause, and is kept only when the new "
    "reference, run in the sandbox on the task's inputs plus generated ones, differs from the previous one"
)


class MbppIleSubset(MbppSubset):
    required_columns = MbppSubset.required_columns + ("proposer", "ile_rounds")

    def __init__(self):
        super().__init__(NAME, SOURCE_DATASETS[NAME], "CC-BY-4.0", SUMMARY)
        self.release_inputs = ("mbpp_raw", "mbpp_ile_tasks", "mbpp_ile_validation")

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        ile, reports, raw = values["mbpp_ile_tasks"], values["mbpp_ile_validation"], values["mbpp_raw"]
        if ile is None or raw is None:
            return None
        replays = {d: reports[d][0] for d in DIALECT_NAMES}
        raw_sha = {NAME: next(iter(raw.inputs.values()))}
        rows, replay_rejections = task_rows(ile.tasks.items, replays, ile.references, raw_sha)
        rows = [r.with_(proposer=ile.proposers[r.task_id], ile_rounds=ile.rounds[r.task_id]) for r in rows]
        rejections = ile.typed.rejections + ile.tasks.rejections + replay_rejections
        released = {r.key for r in rows}
        types = type_usages([a for a in ile.tasks.items if (a.task_id, a.dialect) in released])
        ids = {task_id(NAME, source_id) for source_id in ile.source_ids}
        validation = {d: validation_entry(replays[d], reports[d][1], ids) for d in DIALECT_NAMES}
        manifest = {"operators": ile.ledger.summary()}
        return SubsetRelease(NAME, ile.input_count, raw.inputs, rows, rejections, validation, types, manifest=manifest)


SUBSET = MbppIleSubset()
