"""The subset protocol: what every subset hands the release, and what the release asks of it.

A subset ingests its raw records, builds candidate tasks, validates them by execution, and
hands the release one `SubsetRelease`: its typed task rows, its rejections, its input count
and raw checksums, its manifest `validation` section, and any tables or manifest sections
of its own. The release, the quality suites and the graders read only this and the
`Subset` attributes, so a new subset is one module in `plbench/subsets/` plus `register`.

A subset without hand-written assets is a `StagedSubset`: it declares its stages as plain library
callables (`Stages`), and assets/subsets.py makes its assets from them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from plbench.config import DIALECT_NAMES
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
    # (task_id, dialect) -> (name, code) of trivial candidates the subset made at build time (from what its
    # rows do not hold, e.g. a procedure's model); the release gate runs these instead of Subset.trivial_candidates
    trivial_candidates: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)


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

    def released_manifest(self, part: SubsetRelease) -> dict[str, dict]:
        """The part's own manifest sections on what the release keeps, once the release gates (trivial
        candidates, Oracle grammar) have moved rows to its rejections; by default as the part made them."""
        return part.manifest

    def trivial_candidates(self, row: TaskRow) -> list[tuple[str, str]]:
        """(name, code) of candidates that must fail the task: a released task a trivial candidate
        passes cannot tell a solution from a non-solution. By default those of the task's kind in
        plbench.grading.trivial (function: NULL, the example output; block: nothing, the first line)."""
        from plbench.grading.trivial import trivial_candidates

        return trivial_candidates(as_record(row))


@dataclass
class Staged:
    """What a declared stage hands on: its value (the next stage's input) and the figures its asset shows."""

    value: Any
    count_in: int
    count_out: int
    rejections: list[Rejection] = field(default_factory=list)
    # further JSON figures for the asset's metadata, measurements among them (B2's speedups): shown, not handed
    # on, so no part of what the stage's value is (its content digest, plbench.content_digest)
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def rejected_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(r.reason_code for r in self.rejections).items()))


@dataclass(frozen=True)
class Stages:
    """A subset's stages as plain library callables (no Dagster), each returning a `Staged`:

    - `ingest(config, **inputs)`: `inputs` are the values of the upstream assets named in `inputs`;
    - `build(config, ingested)`, given `engines=` too when `build_engines` names dialects;
    - `validate(config, built, engines)`: `engines` maps each of `validate_engines` to its Engine, or to
      the NotConfigured saying why there is none; its `Staged.value` is the subset's `SubsetRelease`.

    `ingested` and `built` are the previous stage's `Staged.value`. `tasks` and `validation` run them
    as the subset's two assets do (assets/subsets.py).
    """

    ingest: Callable[..., Staged]
    build: Callable[..., Staged]
    validate: Callable[..., Staged]
    inputs: tuple[str, ...] = ()
    build_engines: tuple[str, ...] = ()
    validate_engines: tuple[str, ...] = DIALECT_NAMES

    def tasks(self, config, inputs: dict[str, Any], engines: dict) -> Staged:
        """Ingest, then build: the built tasks, with the records in, the tasks out and both stages' rejections."""
        ingested = self.ingest(config, **inputs)
        built = self.build(config, ingested.value, **({"engines": engines} if self.build_engines else {}))
        rejections = ingested.rejections + built.rejections
        return Staged(built.value, ingested.count_in, built.count_out, rejections, ingested.details | built.details)

    def validation(self, config, built: Staged, engines: dict) -> Staged:
        """Validate: the subset's release part, which gets the earlier stages' rejections too, so every
        input record ends in the release or among its rejections."""
        validated = self.validate(config, built.value, engines)
        part = validated.value
        validated.value = dataclasses.replace(part, rejections=[*built.rejections, *part.rejections])
        return validated


class StagedSubset(Subset):
    """A subset whose assets are made from its `stages` (assets/subsets.py): `<name>_tasks` (ingest, then
    build) and `<name>_validation` (validate), the latter's value holding the subset's release part."""

    stages: Stages

    @property
    def tasks_asset(self) -> str:
        return f"{self.name}_tasks"

    @property
    def validation_asset(self) -> str:
        return f"{self.name}_validation"

    @property
    def release_inputs(self) -> tuple[str, ...]:
        return (self.validation_asset,)

    def release_part(self, config, values: dict[str, Any]) -> SubsetRelease | None:
        validated = values[self.validation_asset]
        return None if validated is None else validated.value
