"""A long stage's progress, for whoever shows it (the build's stage lines): a stage says how many of its units
are done, the caller decides where that goes (`reporting`). The library imports no Dagster."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TypeVar

Result = TypeVar("Result")
Reporter = Callable[[int, int, str], None]  # (units done, units in all, unit)

_reporter: ContextVar[Reporter | None] = ContextVar("plbench_progress", default=None)


@contextlib.contextmanager
def reporting(report: Reporter) -> Iterator[None]:
    """`report` hears of the units done by the stages run inside (in this thread and context)."""
    token = _reporter.set(report)
    try:
        yield
    finally:
        _reporter.reset(token)


def counted(results: Iterable[Result], total: int, unit: str) -> Iterator[Result]:
    """`results`, each reported done as it arrives; iterated in the caller's thread, where `reporting` set
    the reporter (worker threads do not inherit it)."""
    report = _reporter.get()
    for done, result in enumerate(results, 1):
        if report is not None:
            report(done, total, unit)
        yield result
