"""A stage's Python work in a process of its own.

Steps of one run share its process (pipelines/step_threads.py), and two whose work is Python there take
turns at its interpreter lock. A stage whose Python work reads no engine, and whose arguments and value
pickle in a small part of the time the work takes, runs it in a spawned child instead, beside whichever
Python stage runs in the run's process.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext
from typing import TypeVar

T = TypeVar("T")


def spawn_context() -> BaseContext | None:
    """How this process starts workers: spawned, not forked (a run's other threads may hold locks); None
    where it may start none (it is a daemon, as a pool's worker is)."""
    return None if multiprocessing.current_process().daemon else multiprocessing.get_context("spawn")


def in_child_process(work: Callable[..., T], *args) -> T:
    """`work(*args)` in a spawned child process (its arguments and value pickled), its loggers at the levels
    this process set; in this process where none can be started (`spawn_context`)."""
    spawn = spawn_context()
    if spawn is None:
        return work(*args)
    with ProcessPoolExecutor(1, spawn, _set_levels, (_levels(),)) as child:
        return child.submit(work, *args).result()


def _levels() -> dict[str, int]:
    """The levels this process set on its loggers (pipelines/definitions.py quiets sqlglot's warnings)."""
    loggers = logging.Logger.manager.loggerDict.items()
    return {name: lg.level for name, lg in loggers if isinstance(lg, logging.Logger) and lg.level != logging.NOTSET}


def _set_levels(levels: dict[str, int]) -> None:
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
