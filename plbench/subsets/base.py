"""The subset protocol: what every subset hands the release, and what the release asks of it.

A subset ingests its raw records, builds candidate tasks, validates them by execution, and
hands the release one `SubsetRelease`: its typed task rows, its rejections, its input count
and raw checksums, its manifest `validation` section, and any tables or manifest sections
of its own. The release, the quality suites and the graders read only this and the
`Subset` attributes, so a new subset is one module in `plbench/subsets/` plus `register`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from plbench.records import Rejection
from plbench.taskrow import TaskRow, as_record


@dataclass
class SubsetRelease:
    """One subset's part of a release."""

    subset: str
    input_count: int  # input records: released + rejected, per dialect
    inputs: dict[str, str]  # raw file (relative path) -> sha256
    rows: list[TaskRow]
    rejections: list[Rejection]
    validation: dict[str, dict]  # dialect -> the manifest's validation entry (replay, mutants, round trip ...)
    types: list[tuple[str, str, str]] = field(default_factory=list)  # (dialect, name, DDL), once per task using it
    tables: dict[str, tuple[list[dict], pa.Schema]] = field(default_factory=dict)  # its own release tables
    manifest: dict[str, dict] = field(default_factory=dict)  # its own manifest sections, merged per key


class Subset:
    """One subset of the benchmark. Subclasses set the attributes and implement the two methods.

    `release_inputs` names the assets whose values `release_part` takes (by asset key);
    the release asset reads them for every registered subset.
    """

    name: str  # the `subset` column, and the task id prefix
    source_dataset: str  # what the dataset card cites
    licence: str
    summary: str  # one sentence for the dataset card: what a task is and how it was made
    required_columns: tuple[str, ...] = ()  # TaskRow columns every row of the subset fills
    release_inputs: tuple[str, ...] = ()

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        """The subset's part of the release from its assets' values; None when it was not selected."""
        raise NotImplementedError

    def trivial_candidates(self, row: TaskRow) -> list[tuple[str, str]]:
        """(name, code) of candidates that must fail the task: a released task a trivial candidate
        passes cannot tell a solution from a non-solution. By default those of the task's kind in
        plbench.grading.trivial (function: NULL, the example output; block: nothing, the first line)."""
        from plbench.grading.trivial import trivial_candidates

        return trivial_candidates(as_record(row))
