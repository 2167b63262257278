"""Spider-PLSQL as a subset: anonymous blocks that print a Spider 1.0 dev question's answer.

The stages are in plbench.spider (stages: ingest and one database per partition; plsql_tasks:
the task rows). A task's expected output is lines; its trivial candidates (plbench.grading.trivial)
print nothing, or only the first expected line.
"""

from __future__ import annotations

from typing import Any

from plbench.config import DIALECT_NAMES
from plbench.spider.summary import DATABASE_SCHEMA, GOLD_SCHEMA
from plbench.subsets.base import Subset, SubsetRelease


def spider_release_part(inputs, tasks, normalization) -> SubsetRelease:
    """A Spider subset's part from its raw inputs (SpiderInputs), its task stage (SpiderTasks) and the
    normalization summary, whose section, database and gold-query rows of this source it carries."""
    validation = {
        d: {"replay": tasks.validation.get(d, {"ran": False, "reason": "no task stage ran"})} for d in DIALECT_NAMES
    }
    section, databases, gold = normalization.of_source(inputs.source)
    tables = {}
    if databases:
        tables["databases.parquet"] = (databases, DATABASE_SCHEMA)
    if gold:
        tables["gold_queries.parquet"] = (gold, GOLD_SCHEMA)
    return SubsetRelease(
        inputs.subset,
        inputs.input_count,
        inputs.inputs,
        list(tasks.rows),
        list(inputs.rejections) + list(tasks.rejections),
        validation,
        tables=tables,
        manifest={"normalization": {inputs.source: section}} if section else {},
    )


class SpiderSubset(Subset):
    """A Spider dataset's subset: its raw asset, its task asset and the normalization summary."""

    required_columns = ("database", "reference_code")
    raw_asset: str
    tasks_asset: str

    @property
    def release_inputs(self) -> tuple[str, ...]:
        return (self.raw_asset, self.tasks_asset, "normalization_report")

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        if self.name not in config.subsets or values[self.raw_asset] is None:  # spider1_raw serves procedures too
            return None
        return spider_release_part(values[self.raw_asset], values[self.tasks_asset], values["normalization_report"])


class SpiderPlsqlSubset(SpiderSubset):
    name = "spider_plsql"
    source_dataset = "Spider 1.0 (dev)"
    licence = "CC-BY-SA-4.0"
    summary = (
        "anonymous blocks that answer a Spider 1.0 dev question on its database by printing the result "
        "rows, the expected lines taken from the gold query run on the source database"
    )
    raw_asset, tasks_asset = "spider1_raw", "spider_plsql_tasks"


SUBSET = SpiderPlsqlSubset()
