"""Records shared by every stage: raw problems and rejections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def task_id(subset: str, source_id: str) -> str:
    """The stable release id of a task: `mbpp/11`, `mbpp_plus/2` (MBPP+ ids are `Mbpp/2`)."""
    return f"{subset}/{source_id.split('/')[-1]}"


@dataclass(frozen=True)
class Rejection:
    """An input that did not make it into the release, and why.

    `level` is "task" for a whole input record, "case" for one test case of a
    task that is otherwise kept. Counts reconcile at task level:
    input = released + rejected (task level), per subset and dialect.
    `dialect` is None when the rejection holds for every dialect.
    """

    subset: str
    source_id: str
    stage: str
    reason_code: str
    detail: str
    dialect: str | None = None
    level: str = "task"


@dataclass(frozen=True)
class RawProblem:
    """One MBPP or MBPP+ problem as read from its raw file, before any conversion."""

    subset: str  # "mbpp" | "mbpp_plus"
    source_id: str  # "11" for MBPP, "Mbpp/2" for MBPP+
    source_file: str  # path relative to the raw root
    line: int  # 1-based line in source_file
    text: str  # the task description
    entry_point: str | None  # known for MBPP+; MBPP derives it from its asserts
    reference_code: str  # the Python reference solution
    test_list: list[str] = field(default_factory=list)  # MBPP assert strings / MBPP+ example assertion lines
    test_setup_code: str = ""
    base_input: list[Any] | None = None  # MBPP+ only: JSON argument lists
    plus_input: list[Any] | None = None  # MBPP+ only
    atol: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"in_sanitized": True}
